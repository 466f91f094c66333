// SigV4 for Bedrock runtime (service "bedrock"), with @smithy/signature-v4 and the SHA-256 of
// @aws-crypto/sha256-js, as the AWS SDK signs. Credentials come by reference as JSON
// ({"accessKeyId", "secretAccessKey", "sessionToken"?}, the shape of `aws configure export-
// credentials`) or as ACCESS_KEY_ID:SECRET_ACCESS_KEY[:SESSION_TOKEN].
// The signer's packages load with the first signed request: a server without a bedrock Provider
// keeps none of them (~2 MB of heap, issue 43).
import { SvcError } from "../../errors";
import { rememberSecret } from "../redact";

export interface AwsCredentials {
  accessKeyId: string;
  secretAccessKey: string;
  sessionToken?: string;
}

const parsed = new Map<string, AwsCredentials>();

/** The credentials a reference's text holds (memoized: the text is the same on every request).
 * The secret and session token are remembered for redaction on their own, not only as part of
 * the whole text. */
export function parseAwsCredentials(provider: string, text: string): AwsCredentials {
  const hit = parsed.get(text);
  if (hit) return hit;
  const c = parseText(text);
  if (typeof c?.accessKeyId !== "string" || !c.accessKeyId || typeof c.secretAccessKey !== "string" || !c.secretAccessKey) {
    throw new SvcError("upstream", "upstream_error", `provider ${provider} is not usable: its credential is not AWS credentials (JSON with accessKeyId and secretAccessKey, or ID:SECRET)`);
  }
  const out: AwsCredentials = { accessKeyId: c.accessKeyId, secretAccessKey: c.secretAccessKey, ...(c.sessionToken ? { sessionToken: c.sessionToken } : {}) };
  rememberSecret(out.secretAccessKey);
  rememberSecret(out.sessionToken);
  if (parsed.size >= 64) parsed.clear();
  parsed.set(text, out);
  return out;
}

function parseText(text: string): any {
  let c: any;
  if (text.trimStart().startsWith("{")) {
    try {
      const j = JSON.parse(text);
      c = { accessKeyId: j.accessKeyId ?? j.AccessKeyId, secretAccessKey: j.secretAccessKey ?? j.SecretAccessKey, sessionToken: j.sessionToken ?? j.SessionToken };
    } catch {
      c = undefined;
    }
  } else {
    const [accessKeyId, secretAccessKey, sessionToken] = text.trim().split(":");
    c = { accessKeyId, secretAccessKey, sessionToken };
  }
  return c;
}

/** The headers that sign a POST of `body` to `url` (path as sent, already escaped once). */
export async function signedHeaders(creds: AwsCredentials, region: string, url: URL, headers: Record<string, string>, body: string): Promise<Record<string, string>> {
  const [{ SignatureV4 }, { Sha256 }] = await signerModules();
  const signer = new SignatureV4({ credentials: creds, region, service: "bedrock", sha256: Sha256 });
  const query: Record<string, string> = {};
  url.searchParams.forEach((v, k) => (query[k] = v));
  const signed = await signer.sign({
    method: "POST",
    protocol: url.protocol,
    hostname: url.hostname,
    port: url.port ? Number(url.port) : undefined,
    path: url.pathname,
    query,
    headers: { ...headers, host: url.host },
    body,
  });
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(signed.headers)) if (k.toLowerCase() !== "host") out[k] = String(v);
  return out;
}

let modules: Promise<[typeof import("@smithy/signature-v4"), typeof import("@aws-crypto/sha256-js")]> | undefined;
const signerModules = () => (modules ??= Promise.all([import("@smithy/signature-v4"), import("@aws-crypto/sha256-js")]));

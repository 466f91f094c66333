// Vertex AI access tokens from a service-account key (the JSON key file Google issues), the
// OAuth 2.0 JWT bearer grant (RFC 7523) as google-auth-library does it: an RS256 JWT signed with
// node:crypto, {iss: client_email, scope, aud: token URL, iat, exp: iat+3600}, posted to the
// token URL. Tokens are cached per key and token URL and minted again 5 minutes before expiry
// (or at half their life when that is shorter); concurrent requests share one minting.
import { createHash, createSign } from "node:crypto";
import { SvcError } from "../../errors";
import { poolFor, splitUrl, transportError, upstreamError, upstreamText } from "../http";
import { rememberSecret } from "../redact";

export const GOOGLE_TOKEN_URL = "https://oauth2.googleapis.com/token";
const SCOPE = "https://www.googleapis.com/auth/cloud-platform";
const REFRESH_MARGIN_MS = 5 * 60_000;

interface Cached {
  token: string;
  refreshAt: number;
}

const cache = new Map<string, Cached>();
const minting = new Map<string, Promise<string>>();

const b64url = (b: Buffer | string) => Buffer.from(b).toString("base64url");

interface ServiceAccount {
  client_email: string;
  private_key: string;
  token_uri?: string;
}

function parseKey(provider: string, text: string): ServiceAccount {
  let j: any;
  try {
    j = JSON.parse(text);
  } catch {
    j = undefined;
  }
  if (typeof j?.client_email !== "string" || typeof j?.private_key !== "string") {
    throw new SvcError("upstream", "upstream_error", `provider ${provider} is not usable: its credential is not a service-account key (JSON with client_email and private_key)`);
  }
  rememberSecret(j.private_key);
  return j;
}

/** The signed JWT assertion for the token request. */
export function assertion(sa: ServiceAccount, aud: string, nowSec: number): string {
  const head = b64url(JSON.stringify({ alg: "RS256", typ: "JWT" }));
  const claims = b64url(JSON.stringify({ iss: sa.client_email, scope: SCOPE, aud, iat: nowSec, exp: nowSec + 3600 }));
  const sig = createSign("RSA-SHA256").update(`${head}.${claims}`).sign(sa.private_key);
  return `${head}.${claims}.${b64url(sig)}`;
}

async function mint(provider: string, sa: ServiceAccount, url: string, timeoutMs: number): Promise<Cached> {
  const now = Date.now();
  const body = new URLSearchParams({ grant_type: "urn:ietf:params:oauth:grant-type:jwt-bearer", assertion: assertion(sa, url, Math.floor(now / 1000)) }).toString();
  const u = new URL(url);
  const { origin } = splitUrl(url);
  let status: number;
  let text: string;
  try {
    const res = await poolFor(origin).request({
      method: "POST",
      path: u.pathname + u.search,
      headers: { "content-type": "application/x-www-form-urlencoded", accept: "application/json" },
      body,
      headersTimeout: timeoutMs,
      bodyTimeout: timeoutMs,
    });
    status = res.statusCode;
    text = await res.body.text();
  } catch (e) {
    throw transportError(`${provider} (token endpoint)`, e, timeoutMs);
  }
  let j: any;
  try {
    j = JSON.parse(text);
  } catch {
    j = undefined;
  }
  if (status !== 200 || typeof j?.access_token !== "string") {
    const why = typeof j?.error_description === "string" ? j.error_description : typeof j?.error === "string" ? j.error : text;
    throw upstreamError("upstream", "upstream_error", `provider ${provider} could not get an access token (${status}): ${upstreamText(String(why), 300)}`);
  }
  rememberSecret(j.access_token);
  const life = (Number(j.expires_in) > 0 ? Number(j.expires_in) : 3600) * 1000;
  return { token: j.access_token, refreshAt: now + Math.max(life / 2, life - REFRESH_MARGIN_MS) };
}

/** A valid access token for the service-account key `keyText`. */
export async function accessToken(provider: string, keyText: string, tokenUrl: string | undefined, timeoutMs: number): Promise<string> {
  const id = createHash("sha256").update(keyText).update("\0").update(tokenUrl ?? "").digest("hex");
  const c = cache.get(id);
  if (c && Date.now() < c.refreshAt) return c.token;
  let p = minting.get(id);
  if (!p) {
    const sa = parseKey(provider, keyText);
    const url = tokenUrl ?? sa.token_uri ?? GOOGLE_TOKEN_URL;
    p = mint(provider, sa, url, timeoutMs).then(
      (m) => {
        if (cache.size >= 256) cache.clear();
        cache.set(id, m);
        minting.delete(id);
        return m.token;
      },
      (e) => {
        minting.delete(id);
        throw e;
      },
    );
    minting.set(id, p);
  }
  return p;
}

/** Forget every token (tests). */
export function clearVertexTokens(): void {
  cache.clear();
}

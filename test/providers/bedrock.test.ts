// Provider type bedrock against the Bedrock runtime stand-in, which checks the SigV4 signature
// with the same library: the client matrix (matrix.ts), the Converse paths, the signature's
// scope, session tokens, and a wrong secret refused as InvalidSignatureException.
import { mkdir, writeFile } from "node:fs/promises";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startEnv, expectError, type Env } from "../gateway/fixtures";
import { bedrockStandIn } from "./standins/bedrock";
import { providerMatrix } from "./matrix";

let env: Env;
let br: Awaited<ReturnType<typeof bedrockStandIn>>;
const MODEL_ID = "anthropic.claude-3-5-sonnet-20240620-v1:0";
const SECRET = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY";
const WRONG = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYWRONGSECRET";

beforeAll(async () => {
  br = await bedrockStandIn({ region: "eu-west-3", keys: { AKIDSTANDIN0000001: SECRET, AKIDSTANDIN0000002: SECRET }, models: [MODEL_ID] });
  env = await startEnv();
  const dir = path.join(env.home, "aws");
  await mkdir(dir, { recursive: true });
  // the shape `aws configure export-credentials` prints
  await writeFile(path.join(dir, "good.json"), JSON.stringify({ Version: 1, AccessKeyId: "AKIDSTANDIN0000001", SecretAccessKey: SECRET }));
  await writeFile(path.join(dir, "wrong.json"), JSON.stringify({ accessKeyId: "AKIDSTANDIN0000001", secretAccessKey: WRONG }));
  process.env.BR_TEST_SESSION = `AKIDSTANDIN0000002:${SECRET}:FwoGZXIvYXdzEXAMPLESESSIONTOKEN`;
  const spec = (extra: Record<string, unknown>) => ({ type: "bedrock", baseUrl: br.origin, region: "eu-west-3", timeoutSeconds: 10, ...extra });
  await env.apply([
    { kind: "Provider", name: "bedrock-paris", spec: spec({ credential: `file:${dir}/good.json`, models: [{ name: "claude-sonnet", upstreamName: MODEL_ID, inputPerMillion: 3, outputPerMillion: 15 }] }) },
    { kind: "Provider", name: "bedrock-wrong", spec: spec({ credential: `file:${dir}/wrong.json`, models: [{ name: "claude-wrong", upstreamName: MODEL_ID }] }) },
    { kind: "Provider", name: "bedrock-session", spec: spec({ credential: "env:BR_TEST_SESSION", models: [{ name: "claude-session", upstreamName: MODEL_ID }] }) },
    { kind: "Provider", name: "bedrock-us", spec: spec({ credential: `file:${dir}/good.json`, region: "us-east-1", models: [{ name: "claude-us", upstreamName: MODEL_ID }] }) },
  ]);
});
afterAll(async () => {
  await env?.stop();
  await br?.close();
});

describe("bedrock", () => {
  providerMatrix(() => ({ env, model: "claude-sonnet", provider: "bedrock-paris", price: { input: 3, output: 15 }, badModel: "claude-wrong", badProvider: "bedrock-wrong", badSecret: WRONG }));

  it("signs Converse and ConverseStream calls for the manifest's region; the stand-in checked the signature", async () => {
    const k = await env.key();
    const n = br.requests.length;
    await env.client(k.secret).chat.completions.create({ model: "claude-sonnet", messages: [{ role: "system", content: "Be brief." }, { role: "user", content: "x" }], max_tokens: 20, temperature: 0.2 });
    const got = br.requests[n];
    expect(got.url).toBe(`/model/${encodeURIComponent(MODEL_ID)}/converse`);
    expect(String(got.headers.authorization)).toMatch(/^AWS4-HMAC-SHA256 Credential=AKIDSTANDIN0000001\/\d{8}\/eu-west-3\/bedrock\/aws4_request, SignedHeaders=.*host.*, Signature=[0-9a-f]{64}$/);
    expect(got.body).toEqual({ messages: [{ role: "user", content: [{ text: "x" }] }], system: [{ text: "Be brief." }], inferenceConfig: { maxTokens: 20, temperature: 0.2 } });
    expect(JSON.stringify(got.headers)).not.toContain(SECRET);
  });

  it("sends the session token of temporary credentials", async () => {
    const k = await env.key();
    const r = await env.client(k.secret).chat.completions.create({ model: "claude-session", messages: [{ role: "user", content: "temp" }] });
    expect(r.choices[0].message.content).toBe("echo: temp");
    expect(br.requests[br.requests.length - 1].headers["x-amz-security-token"]).toBe("FwoGZXIvYXdzEXAMPLESESSIONTOKEN");
  });

  it("a signature scoped to another region is refused by the stand-in: 502 naming the provider", async () => {
    const k = await env.key();
    const e = await expectError(env.client(k.secret).chat.completions.create({ model: "claude-us", messages: [{ role: "user", content: "x" }] }), 502, "upstream_error");
    expect(e.message).toContain("provider bedrock-us rejected the gateway's credential (403)");
  });
});

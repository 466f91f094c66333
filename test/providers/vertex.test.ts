// Provider type vertex against the Vertex AI stand-in and its OAuth token endpoint stand-in: a
// service-account key (a fresh RSA key) by file: reference; svc signs a JWT, trades it for an
// access token, uses it as the bearer token, and mints a new one before it expires.
import { generateKeyPairSync } from "node:crypto";
import { writeFile } from "node:fs/promises";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import Anthropic from "@anthropic-ai/sdk";
import { startEnv, type Env } from "../gateway/fixtures";
import { googleTokenStandIn, vertexStandIn } from "./standins/gemini";
import { providerMatrix } from "./matrix";

let env: Env;
let tok: Awaited<ReturnType<typeof googleTokenStandIn>>;
let shortTok: Awaited<ReturnType<typeof googleTokenStandIn>>;
let vx: Awaited<ReturnType<typeof vertexStandIn>>;
const EMAIL = "svc-test@standin-project.iam.gserviceaccount.com";
let otherKeyPem = "";

beforeAll(async () => {
  const { privateKey, publicKey } = generateKeyPairSync("rsa", { modulusLength: 2048 });
  const other = generateKeyPairSync("rsa", { modulusLength: 2048 });
  otherKeyPem = other.privateKey.export({ type: "pkcs8", format: "pem" }).toString();
  const pub = publicKey.export({ type: "spki", format: "pem" }).toString();
  tok = await googleTokenStandIn({ clientEmail: EMAIL, publicKeyPem: pub });
  shortTok = await googleTokenStandIn({ clientEmail: EMAIL, publicKeyPem: pub, tokenSeconds: 2 });
  const valid = (t: string | undefined) => tok.valid(t) || shortTok.valid(t);
  vx = await vertexStandIn({ project: "standin-project", location: "europe-west4", models: ["gemini-2.0-flash-001"], tokens: { valid } });
  env = await startEnv();
  const sa = (key: string) => JSON.stringify({ type: "service_account", project_id: "standin-project", private_key_id: "k1", private_key: key, client_email: EMAIL, token_uri: "https://oauth2.googleapis.com/token" });
  await writeFile(path.join(env.home, "sa.json"), sa(privateKey.export({ type: "pkcs8", format: "pem" }).toString()));
  await writeFile(path.join(env.home, "sa-other.json"), sa(otherKeyPem));
  const spec = (extra: Record<string, unknown>) => ({ type: "vertex", baseUrl: `${vx.origin}/v1`, project: "standin-project", region: "europe-west4", tokenUrl: tok.tokenUrl, timeoutSeconds: 10, ...extra });
  await env.apply([
    { kind: "Provider", name: "vertex-eu", spec: spec({ credential: `file:${env.home}/sa.json`, models: [{ name: "vertex-flash", upstreamName: "gemini-2.0-flash-001", inputPerMillion: 0.15, outputPerMillion: 0.6 }] }) },
    { kind: "Provider", name: "vertex-wrongkey", spec: spec({ credential: `file:${env.home}/sa-other.json`, models: [{ name: "vertex-bad", upstreamName: "gemini-2.0-flash-001" }] }) },
    { kind: "Provider", name: "vertex-short", spec: spec({ credential: `file:${env.home}/sa.json`, tokenUrl: shortTok.tokenUrl, models: [{ name: "vertex-short", upstreamName: "gemini-2.0-flash-001" }] }) },
  ]);
});
afterAll(async () => {
  await env?.stop();
  await vx?.close();
  await tok?.close();
  await shortTok?.close();
});

describe("vertex", () => {
  providerMatrix(() => ({ env, model: "vertex-flash", provider: "vertex-eu", price: { input: 0.15, output: 0.6 }, badModel: "vertex-bad", badProvider: "vertex-wrongkey", badSecret: otherKeyPem.split("\n")[1] }));

  it("calls the regional publisher model path with a token from the token endpoint, minted once and reused", async () => {
    const k = await env.key();
    const n = vx.requests.length;
    const mints = tok.requests.filter((r) => r.raw.includes("assertion")).length;
    for (let i = 0; i < 3; i++) await env.client(k.secret).chat.completions.create({ model: "vertex-flash", messages: [{ role: "user", content: "x" }] });
    const got = vx.requests.slice(n);
    expect(got.map((r) => r.url)).toEqual(Array(3).fill("/v1/projects/standin-project/locations/europe-west4/publishers/google/models/gemini-2.0-flash-001:generateContent"));
    expect(new Set(got.map((r) => r.headers.authorization)).size).toBe(1);
    expect(String(got[0].headers.authorization)).toMatch(/^Bearer ya29\.standin-/);
    // earlier tests minted the token already: no new minting for these three
    expect(tok.requests.filter((r) => r.raw.includes("assertion")).length).toBe(mints);
  });

  it("mints a new token before the old one expires", async () => {
    const k = await env.key();
    const c = env.client(k.secret);
    await c.chat.completions.create({ model: "vertex-short", messages: [{ role: "user", content: "x" }] });
    expect(shortTok.requests.length).toBe(1);
    const first = vx.requests[vx.requests.length - 1].headers.authorization;
    // the 2 s token is renewed at half its life: every request succeeds, and a second mint happens
    const end = Date.now() + 15_000;
    while (shortTok.requests.length < 2 && Date.now() < end) {
      const r = await c.chat.completions.create({ model: "vertex-short", messages: [{ role: "user", content: "x" }] });
      expect(r.choices[0].message.content).toBe("echo: x");
      await new Promise((r) => setTimeout(r, 100));
    }
    expect(shortTok.requests.length).toBe(2);
    expect(vx.requests[vx.requests.length - 1].headers.authorization).not.toBe(first);
  });

  it("an image from the Anthropic client reaches Vertex as inlineData {mimeType, data}", async () => {
    const k = await env.key();
    const png = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==";
    const r = await new Anthropic({ baseURL: env.url, apiKey: k.secret, maxRetries: 0 }).messages.create({
      model: "vertex-flash",
      max_tokens: 20,
      messages: [{ role: "user", content: [{ type: "text", text: "see" }, { type: "image", source: { type: "base64", media_type: "image/png", data: png } }] }],
    });
    expect(r.content[0]).toMatchObject({ type: "text", text: "echo: see" });
    expect(vx.requests[vx.requests.length - 1].body.contents[0].parts).toEqual([{ text: "see" }, { inlineData: { mimeType: "image/png", data: png } }]);
  });
});

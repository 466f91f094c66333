// Deeply nested JSON never becomes a 500: bodies nesting past the bound are a 400 naming the
// field, oversized metadata too; and export survives a deep value an older version stored.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { parse as parseYaml } from "yaml";
import { startEnv, standIn, provider, type Env, type StandIn } from "../gateway/fixtures";
import { MAX_JSON_DEPTH } from "../../api/json-bounds";

let env: Env;
let up: StandIn;

beforeAll(async () => {
  up = await standIn();
  env = await startEnv();
  await env.apply([provider("up", up, [{ name: "gpt-x" }])]);
});
afterAll(async () => {
  await env?.stop();
  await up?.close();
});

/** {a: {a: … {a: 1}}} n levels deep, built without recursion */
function deep(n: number): Record<string, unknown> {
  let v: Record<string, unknown> = { a: 1 };
  for (let i = 1; i < n; i++) v = { a: v };
  return v;
}

/** the JSON text of deep(n), written out (JSON.stringify itself overflows the stack there) */
const deepText = (n: number) => '{"a":'.repeat(n - 1) + '{"a":1}' + "}".repeat(n - 1);

const post = async (p: string, body: unknown, key = env.adminKey) => {
  const text = typeof body === "string" ? body : JSON.stringify(body);
  const res = await fetch(env.url + p, { method: "POST", headers: { authorization: `Bearer ${key}`, "content-type": "application/json" }, body: text });
  return { status: res.status, json: (await res.json()) as any };
};

describe("request bodies", () => {
  it("metadata 5,000 deep is a 400 naming metadata on /v1/responses, /v1/api-keys and /v1/api-keys/temporary", async () => {
    const metadata = deepText(5000);
    const cases: Array<[string, string]> = [
      ["/v1/responses", `{"model":"gpt-x","input":"hi","metadata":${metadata}}`],
      ["/v1/api-keys", `{"name":"deep","metadata":${metadata}}`],
      ["/v1/api-keys/temporary", `{"expires_in":60,"metadata":${metadata}}`],
      ["/v1/chat/completions", `{"model":"gpt-x","messages":[{"role":"user","content":"hi"}],"metadata":${metadata}}`],
    ];
    for (const [p, body] of cases) {
      const r = await post(p, body);
      expect(r.status, p).toBe(400);
      expect(r.json.error.code, p).toBe("invalid_request");
      expect(r.json.error.param, p).toBe("metadata");
    }
  });

  it("any deep field is refused the same way, on every protocol (Anthropic and Ollama shapes too)", async () => {
    const r1 = await post("/v1/messages", { model: "gpt-x", max_tokens: 4, messages: [{ role: "user", content: "hi" }], tools: [deep(200)] });
    expect(r1.status).toBe(400);
    expect(r1.json.error.message).toContain("tools");
    const r2 = await post("/api/chat", { model: "gpt-x", messages: [{ role: "user", content: "hi" }], options: deep(100) });
    expect(r2.status).toBe(400);
    expect(r2.json.error).toContain("options");
  });

  it("metadata up to the bound is accepted; metadata over 16 KiB is refused", async () => {
    const ok = await post("/v1/api-keys", { name: "at the bound", metadata: deep(MAX_JSON_DEPTH - 1) });
    expect(ok.status).toBe(201);
    const big = await post("/v1/api-keys", { name: "big", metadata: { blob: "x".repeat(20_000) } });
    expect(big.status).toBe(400);
    expect(big.json.error.param).toBe("metadata");
  });
});

describe("export", () => {
  it("survives a key with metadata 1,000 deep stored by an older version", async () => {
    await env.svc.svc.store.write([
      { op: "upsert", kind: "ApiKey", name: "key_legacydeep", owner: "api", spec: { name: "legacy", key_type: "user", secretHash: "sha256:" + "ab".repeat(32), metadata: deep(1000) } },
    ]);
    const texts: Record<string, string> = {};
    for (const format of ["yaml", "json"]) {
      const res = await fetch(`${env.url}/admin/config/export?format=${format}&includeApiOwned=true`);
      expect(res.status, format).toBe(200);
      const text = await res.text();
      const docs = format === "json" ? JSON.parse(text) : text.split(/^---$/m).map((d) => parseYaml(d));
      const key = docs.find((d: any) => d?.metadata?.name === "key_legacydeep");
      expect(key, format).toBeTruthy();
      expect(key.spec.name).toBe("legacy");
      expect(JSON.stringify(key.spec.metadata)).toContain("omitted: nested deeper than");
      texts[format] = text;
    }
    expect(texts.yaml).toContain("replaced: the stored value cannot be exported");
    // the key routes keep working with it stored
    expect((await env.api("GET", "/v1/api-keys")).status).toBe(200);
    expect((await env.api("GET", "/v1/api-keys/key_legacydeep")).status).toBe(200);
  });
});

// Every way a client may send a key is read (Bearer, Token, Basic as user or password,
// x-api-key), and a credential svc cannot use (another scheme, an empty value, ?api_key=) is a
// 401 naming the accepted forms, never "no key" (which loopback would serve anonymously).
// Authentication also comes before the body: a bad key with a bad body is a 401 on every
// inference route and on the key-management routes.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startEnv, standIn, provider, type Env, type StandIn } from "../gateway/fixtures";

let env: Env;
let up: StandIn;
let key: { id: string; secret: string };

beforeAll(async () => {
  up = await standIn();
  env = await startEnv();
  await env.apply([provider("up", up, [{ name: "gpt-x" }])]);
  // a rate limit makes a request made with this key visible (x-ratelimit-* headers)
  key = await env.key({ name: "forms", rate_limits: { per_minute: 1000 } });
});
afterAll(async () => {
  await env?.stop();
  await up?.close();
});

const b64 = (s: string) => Buffer.from(s).toString("base64");
const chatBody = JSON.stringify({ model: "gpt-x", messages: [{ role: "user", content: "hi" }] });

async function chat(headers: Record<string, string>, query = "") {
  const res = await fetch(`${env.url}/v1/chat/completions${query}`, { method: "POST", headers: { "content-type": "application/json", ...headers }, body: chatBody });
  return { status: res.status, headers: res.headers, json: (await res.json()) as any };
}

describe("credential forms", () => {
  it("reads Bearer, Token, Basic (key as password or as user name) and x-api-key as the key", async () => {
    const forms: Record<string, Record<string, string>> = {
      bearer: { authorization: `Bearer ${key.secret}` },
      token: { authorization: `Token ${key.secret}` },
      "basic, key as password": { authorization: `Basic ${b64(`anything:${key.secret}`)}` },
      "basic, key as user (curl -u key:)": { authorization: `Basic ${b64(`${key.secret}:`)}` },
      "x-api-key": { "x-api-key": key.secret },
    };
    for (const [name, headers] of Object.entries(forms)) {
      const r = await chat(headers);
      expect(r.status, name).toBe(200);
      // the request counted against this key (anonymous loopback has no rate headers)
      expect(r.headers.get("x-ratelimit-limit-requests"), name).toBe("1000");
    }
  });

  it("a revoked key is refused in every form", async () => {
    const gone = await env.key({ name: "revoked" });
    expect((await env.api("DELETE", `/v1/api-keys/${gone.id}`)).status).toBe(200);
    for (const headers of [{ authorization: `Basic ${b64(`u:${gone.secret}`)}` }, { authorization: `Token ${gone.secret}` }]) {
      const r = await chat(headers);
      expect(r.status).toBe(401);
      expect(r.json.error.code).toBe("key_revoked");
    }
  });

  it("refuses forms it cannot read with 401 naming the accepted ones, never as anonymous loopback", async () => {
    const cases: Array<[string, Record<string, string>, string]> = [
      ["Digest scheme", { authorization: `Digest username="u", response="${key.secret}"` }, ""],
      ["empty Bearer", { authorization: "Bearer" }, ""],
      ["Basic without user:password", { authorization: `Basic ${b64(key.secret)}` }, ""],
      ["key in the query string", {}, `?api_key=${key.secret}`],
    ];
    for (const [name, headers, query] of cases) {
      const r = await chat(headers, query);
      expect(r.status, name).toBe(401);
      expect(r.json.error.code, name).toBe("invalid_api_key");
      expect(r.json.error.message, name).toContain("Authorization: Bearer");
      expect(JSON.stringify(r.json), name).not.toContain(key.secret);
    }
    // the same on a key-management route
    for (const [name, headers, query] of cases) {
      const res = await fetch(`${env.url}/v1/api-keys${query || ""}`, { headers: name === "key in the query string" ? {} : { ...headers } });
      expect(res.status, name).toBe(401);
    }
  });

  it("management routes read the same forms (the admin key as Basic or Token)", async () => {
    for (const authorization of [`Basic ${b64(`admin:${env.adminKey}`)}`, `Token ${env.adminKey}`, `bearer ${env.adminKey}`]) {
      const res = await fetch(`${env.url}/v1/api-keys`, { headers: { authorization } });
      expect(res.status, authorization.split(" ")[0]).toBe(200);
    }
  });
});

describe("authentication before the body", () => {
  const inference = ["/v1/chat/completions", "/v1/completions", "/v1/responses", "/v1/embeddings", "/v1/messages", "/api/chat", "/api/generate", "/api/embed", "/api/embeddings", "/v1/messages/count_tokens", "/api/show"];

  it("a bad key with a malformed body is a 401 on every inference route (400 with a good key)", async () => {
    for (const p of inference) {
      const bad = await fetch(env.url + p, { method: "POST", headers: { authorization: "Bearer sk-svc-not-a-key", "content-type": "application/json" }, body: "{nope" });
      expect(bad.status, p).toBe(401);
      const good = await fetch(env.url + p, { method: "POST", headers: { authorization: `Bearer ${key.secret}`, "content-type": "application/json" }, body: "{nope" });
      expect(good.status, p).toBe(400);
    }
  });

  it("a bad key with a malformed body is a 401 on the key-management routes", async () => {
    for (const [method, p] of [["POST", "/v1/api-keys"], ["POST", "/v1/api-keys/temporary"], ["PATCH", `/v1/api-keys/${key.id}`]]) {
      const res = await fetch(env.url + p, { method, headers: { authorization: "Bearer sk-svc-not-a-key", "content-type": "application/json" }, body: "{nope" });
      expect(res.status, p).toBe(401);
    }
  });
});

// The inference routes are served by the lean listener (api/inference-listener.ts), not Koa:
// they must still behave like every other route — request ids, each protocol's error shape,
// body limits, no stack traces — and anything else must still reach Koa.
import { describe, it, expect, beforeAll, afterAll } from "vitest";
import http from "node:http";
import { startTestSvc, type TestSvc } from "../helpers/svc";

let s: TestSvc;
beforeAll(async () => {
  s = await startTestSvc();
});
afterAll(async () => {
  await s?.stop();
});

const post = (path: string, body: string, headers: Record<string, string> = {}) =>
  fetch(`${s.url}${path}`, { method: "POST", headers: { "content-type": "application/json", ...headers }, body });

describe("inference listener", () => {
  it("bad JSON is a 400 in the OpenAI shape with a request id; a sane client id is echoed", async () => {
    const r = await post("/v1/chat/completions", "{nope", { "x-request-id": "trace-42" });
    expect(r.status).toBe(400);
    expect(r.headers.get("content-type")).toMatch(/^application\/json/);
    expect(r.headers.get("x-request-id")).toBe("trace-42");
    const j: any = await r.json();
    expect(j.error).toMatchObject({ code: "invalid_request", type: "invalid_request_error" });
    expect(j.error.message).toMatch(/not valid JSON/);

    const bad = await post("/v1/completions", "[]", { "x-request-id": "bad id with spaces" });
    expect(bad.status).toBe(400);
    expect(bad.headers.get("x-request-id")).toMatch(/^req_/);
    expect(((await bad.json()) as any).error.message).toMatch(/JSON object/);
  });

  it("an oversized body is a 413, never a stack trace", async () => {
    const r = await post("/v1/chat/completions", JSON.stringify({ model: "m", messages: [{ role: "user", content: "x".repeat(4 * 1024 * 1024 + 10) }] }));
    expect(r.status).toBe(413);
    const text = await r.text();
    expect(JSON.parse(text).error.message).toMatch(/exceeds/);
    expect(text).not.toMatch(/at .*\.ts:\d+/);
  });

  it("a chunked body (no content-length) is cut at the limit as it arrives: a 413, and the server keeps serving", async () => {
    const u = new URL(`${s.url}/v1/chat/completions`);
    const status = await new Promise<number>((resolve, reject) => {
      const req = http.request({ host: u.hostname, port: u.port, path: u.pathname, method: "POST", headers: { "content-type": "application/json" } }, (res) => {
        res.resume();
        resolve(res.statusCode ?? 0);
      });
      req.on("error", reject);
      const chunk = Buffer.alloc(256 * 1024, 0x20);
      let sent = 0;
      const more = () => {
        while (sent < 5 * 1024 * 1024 && req.write(chunk)) sent += chunk.length;
        if (sent >= 5 * 1024 * 1024) req.end();
      };
      req.on("drain", () => {
        sent += chunk.length;
        more();
      });
      more();
    });
    expect(status).toBe(413);
    expect((await post("/v1/chat/completions", "{nope")).status).toBe(400);
  });

  it("each protocol keeps its error shape: Anthropic with request-id, Ollama {error}", async () => {
    const a = await post("/v1/messages", "{nope");
    expect(a.status).toBe(400);
    expect(a.headers.get("request-id")).toBe(a.headers.get("x-request-id"));
    expect(await a.json()).toMatchObject({ type: "error", error: { type: "invalid_request_error" } });

    const o = await post("/api/chat", "{nope");
    expect(o.status).toBe(400);
    const oj: any = await o.json();
    expect(typeof oj.error).toBe("string");
  });

  it("an unknown model is a 404 model_not_found; a query string or a trailing slash does not change the route", async () => {
    const slash = await post("/v1/chat/completions/", JSON.stringify({ model: "no-such-model", messages: [{ role: "user", content: "hi" }] }));
    expect(((await slash.json()) as any).error.code).toBe("model_not_found");
    const r = await post("/v1/chat/completions?trace=1", JSON.stringify({ model: "no-such-model", messages: [{ role: "user", content: "hi" }] }));
    expect(r.status).toBe(404);
    expect(((await r.json()) as any).error.code).toBe("model_not_found");
  });

  it("another method on an inference path is a 405 naming POST; every other route still goes through Koa", async () => {
    const g = await fetch(`${s.url}/v1/chat/completions`);
    expect(g.status).toBe(405);
    expect(g.headers.get("allow")).toBe("POST");
    expect(((await g.json()) as any).error.message).toMatch(/use POST/);
    const m = await fetch(`${s.url}/v1/messages`, { method: "PUT" });
    expect(m.status).toBe(405);
    expect(await m.json()).toMatchObject({ type: "error", error: { type: "invalid_request_error" } });
    const h = await fetch(`${s.url}/health`);
    expect(h.status).toBe(200);
    expect(h.headers.get("x-request-id")).toMatch(/^req_/);
  });
});

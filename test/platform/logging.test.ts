// The logger (api/log.ts) and the access line (api/request-id.ts) in-process: levels filter,
// secrets are redacted wherever they sit, human lines for terminals, and both request paths
// (Koa and the lean inference listener) write one access line each.
import { Writable } from "node:stream";
import { readFileSync } from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { createLogger, jsonLogger, loadPretty, parseLogLevel } from "../../api/log";
import { startTestSvc } from "../helpers/svc";
import { postJson, until } from "../helpers/http";

describe("logger", () => {
  it("filters by level", () => {
    const lines: string[] = [];
    const log = jsonLogger({ level: "warn", write: (l) => lines.push(l) });
    log.info("hidden");
    log.debug("hidden too");
    log.warn("shown", { n: 1 });
    log.error("also shown");
    expect(lines.map((l) => JSON.parse(l).msg)).toEqual(["shown", "also shown"]);
    expect(JSON.parse(lines[0])).toMatchObject({ level: "warn", n: 1 });
    expect(log.enabled("info")).toBe(false);
    expect(() => parseLogLevel("verbose", "--log-level")).toThrow(/must be one of fatal, error, warn, info, debug, trace, silent/);
  });

  it("writes access lines as JSON whatever the path text, with the base fields", () => {
    const lines: string[] = [];
    const log = jsonLogger({ base: { replica: "r1" }, write: (l) => lines.push(l) });
    const route = 'unmatched/"quoted"\\back\nline\u0001 é 😀';
    log.access({ requestId: "req_1", method: "GET", route, status: 404, latencyMs: 0.125, aborted: true });
    log.access({ requestId: "req_2", keyId: "key_1", method: "POST", route: "/v1/chat/completions", status: 200, latencyMs: 3 });
    const [a, b] = lines.map((l) => JSON.parse(l));
    expect(a).toMatchObject({ level: "info", replica: "r1", requestId: "req_1", method: "GET", route, status: 404, latencyMs: 0.125, aborted: true, msg: "request" });
    expect(a).not.toHaveProperty("keyId");
    expect(b).toMatchObject({ requestId: "req_2", keyId: "key_1", status: 200, latencyMs: 3 });
    expect(b).not.toHaveProperty("aborted");
    expect(Number.isNaN(Date.parse(a.time))).toBe(false);
  });

  it("redacts secret fields at any depth and credentials inside strings", () => {
    const lines: string[] = [];
    const log = jsonLogger({ write: (l) => lines.push(l) });
    log.warn("upstream said: invalid Authorization: Bearer abcdefgh12345678 for sk-svc-AAAABBBBCCCC", {
      req: { headers: { authorization: "Basic dXNlcjpwYXNzd29yZA==", "x-api-key": "raw-key-value", cookie: "session=1" } },
      provider: { credential: "env:OPENAI_KEY", client_secret: "shh-value", refresh_token: "rt-value" },
      err: new Error("failed with token Bearer zyxwvutsrq987654"),
      list: [{ password: "pw-value" }],
      tokens: 12,
    });
    const j = JSON.parse(lines[0]);
    expect(j.msg).toBe("upstream said: invalid Authorization: Bearer [redacted] for sk-svc-[redacted]");
    expect(j.req.headers).toEqual({ authorization: "[redacted]", "x-api-key": "[redacted]", cookie: "[redacted]" });
    expect(j.provider).toEqual({ credential: "[redacted]", client_secret: "[redacted]", refresh_token: "[redacted]" });
    expect(j.err.message).toBe("failed with token Bearer [redacted]");
    expect(j.list).toEqual([{ password: "[redacted]" }]);
    expect(j.tokens).toBe(12);
    for (const s of ["abcdefgh12345678", "AAAABBBBCCCC", "dXNlcjpwYXNzd29yZA", "raw-key-value", "shh-value", "rt-value", "zyxwvutsrq987654", "pw-value"]) {
      expect(lines[0]).not.toContain(s);
    }
  });

  it("writes plain human lines in the pretty format", async () => {
    await loadPretty();
    let text = "";
    const destination = new Writable({
      write(chunk, _enc, cb) {
        text += chunk;
        cb();
      },
    });
    const log = createLogger({ format: "pretty", destination });
    log.info("listening", { url: "http://127.0.0.1:1337" });
    log.warn("careful", { authorization: "Bearer sk-svc-zzzzzzzz" });
    await until(() => text.split("\n").length >= 3, 2000);
    const lines = text.trim().split("\n");
    expect(lines[0]).toMatch(/^\[\d\d:\d\d:\d\d\] INFO: listening \{"url":"http:\/\/127\.0\.0\.1:1337"\}$/);
    expect(lines[1]).toMatch(/^\[\d\d:\d\d:\d\d\] WARN: careful \{"authorization":"\[redacted\]"\}$/);
  });
});

describe("access lines", () => {
  it("one per request on the Koa app and on the inference listener, with request id and status", async () => {
    const s = await startTestSvc();
    try {
      expect((await fetch(`${s.url}/health`, { headers: { "x-request-id": "koa-1" } })).status).toBe(200);
      const r = await postJson(`${s.url}/v1/chat/completions`, { model: "absent", messages: [{ role: "user", content: "x" }] }, { "x-request-id": "lean-1" });
      expect(r.status).toBe(404); // no such model
      const line = (id: string) => s.logs.find((l) => l.msg === "request" && l.requestId === id);
      await until(() => !!line("koa-1") && !!line("lean-1"));
      expect(line("koa-1")).toMatchObject({ level: "info", method: "GET", route: "/health", status: 200 });
      expect(line("lean-1")).toMatchObject({ level: "info", method: "POST", route: "/v1/chat/completions", status: r.status });
      expect(s.logs.filter((l) => l.requestId === "lean-1")).toHaveLength(1);
    } finally {
      await s.stop();
    }
  });

  it("carry the key id (never the key) on routes outside the inference pipeline", async () => {
    const s = await startTestSvc();
    try {
      const admin = readFileSync(path.join(s.home, "admin.key"), "utf8").trim();
      const made = await postJson(`${s.url}/v1/api-keys`, { name: "log-key" }, { authorization: `Bearer ${admin}` });
      expect(made.status).toBe(201);
      const h = { authorization: `Bearer ${made.json.api_key}` };
      const paths = ["/mcp/tools", "/agents", "/memory/status?agent_id=none", "/pair/hello"];
      for (const [i, p] of paths.entries()) await fetch(s.url + p, { headers: { ...h, "x-request-id": `key-${i}` } });
      const line = (id: string) => s.logs.find((l) => l.msg === "request" && l.requestId === id);
      await until(() => paths.every((_, i) => !!line(`key-${i}`)));
      for (const [i, p] of paths.entries()) expect(line(`key-${i}`)?.keyId, p).toBe(made.json.id);
      expect(JSON.stringify(s.logs)).not.toContain(made.json.api_key);
    } finally {
      await s.stop();
    }
  });

  it("none when the level is warn", async () => {
    const lines: string[] = [];
    const s = await startTestSvc({ log: jsonLogger({ level: "warn", write: (l) => lines.push(l) }) });
    try {
      expect((await fetch(`${s.url}/health`)).status).toBe(200);
      const r = await postJson(`${s.url}/v1/chat/completions`, { model: "absent", messages: [{ role: "user", content: "x" }] });
      expect(r.status).toBe(404); // no such model
    } finally {
      await s.stop();
    }
    expect(lines.filter((l) => JSON.parse(l).msg === "request")).toEqual([]);
  });
});

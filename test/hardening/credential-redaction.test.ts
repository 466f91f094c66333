// Upstream credentials never reach a client, a log line or an audit row: a stand-in upstream
// echoes the Authorization / x-api-key header and a custom header credential in its 401, 400 and
// 500 error text (and in a mid-stream error event); every protocol route, streaming or not,
// answers the failure without them.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { randomBytes } from "node:crypto";
import { writeFileSync } from "node:fs";
import path from "node:path";
import { startEnv, type Env } from "../gateway/fixtures";

const rnd = () => randomBytes(9).toString("hex");
// not key-shaped on purpose: only the redactor's memory of resolved values can catch them
const CRED = `upstream-cred-${rnd()}`;
const CUSTOM = `custom-header-secret-${rnd()}`;
const FILE_CRED = `file-cred-${rnd()}`;
const SECRETS = [CRED, CUSTOM, FILE_CRED];

/** Echoes every credential it was sent in its error text; upstreamName "status:N" picks N. */
async function echoUpstream() {
  const seen = { echoed: 0 }; // answers that carried the provider credential and the custom header
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c) => chunks.push(c));
    req.on("end", () => {
      const body = JSON.parse(Buffer.concat(chunks).toString("utf8") || "{}");
      const echo = `Incorrect API key provided: ${req.headers.authorization ?? ""} x-api-key: ${req.headers["x-api-key"] ?? ""} custom=${req.headers["x-custom-auth"] ?? ""}`;
      if ((echo.includes(CRED) || echo.includes(FILE_CRED)) && echo.includes(CUSTOM)) seen.echoed++;
      const mode = String(body.model ?? "");
      if (mode === "midstream") {
        res.writeHead(200, { "content-type": "text/event-stream" });
        if (req.url?.endsWith("/messages")) {
          res.write(`event: message_start\ndata: ${JSON.stringify({ type: "message_start", message: { usage: { input_tokens: 1 } } })}\n\n`);
          res.write(`event: content_block_delta\ndata: ${JSON.stringify({ type: "content_block_delta", index: 0, delta: { type: "text_delta", text: "partial " } })}\n\n`);
          res.end(`event: error\ndata: ${JSON.stringify({ type: "error", error: { type: "api_error", message: echo } })}\n\n`);
        } else {
          res.write(`data: ${JSON.stringify({ choices: [{ index: 0, delta: { content: "partial " } }] })}\n\n`);
          res.end(`data: ${JSON.stringify({ error: { message: echo } })}\n\n`);
        }
        return;
      }
      const status = Number(mode.replace("status:", "")) || 500;
      const text = status === 500 ? echo : JSON.stringify({ error: { message: echo, type: "invalid_request_error" } });
      res.writeHead(status, { "content-type": status === 500 ? "text/plain" : "application/json" });
      res.end(text);
    });
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  const port = (server.address() as AddressInfo).port;
  return { port, seen, close: () => new Promise<void>((r) => (server.closeAllConnections(), server.close(() => r()))) };
}

let env: Env;
let up: Awaited<ReturnType<typeof echoUpstream>>;
let key: { id: string; secret: string };
const MODES = ["status:401", "status:400", "status:500", "midstream"];

beforeAll(async () => {
  process.env.REDACT_TEST_CRED = CRED;
  process.env.REDACT_TEST_CUSTOM = CUSTOM;
  up = await echoUpstream();
  env = await startEnv();
  const credFile = path.join(env.home, "anthropic.key");
  writeFileSync(credFile, FILE_CRED + "\n");
  const models = (p: string) => MODES.map((m) => ({ name: `${p}-${m}`, upstreamName: m }));
  await env.apply([
    { kind: "Provider", name: "oai", spec: { type: "openai", baseUrl: `http://127.0.0.1:${up.port}/v1`, credential: "env:REDACT_TEST_CRED", headers: { "x-custom-auth": "env:REDACT_TEST_CUSTOM" }, timeoutSeconds: 5, models: models("oai") } },
    { kind: "Provider", name: "ant", spec: { type: "anthropic", baseUrl: `http://127.0.0.1:${up.port}`, credential: `file:${credFile}`, headers: { "x-custom-auth": "env:REDACT_TEST_CUSTOM" }, timeoutSeconds: 5, models: models("ant") } },
  ]);
  key = await env.key({ name: "redaction" });
});

afterAll(async () => {
  await env?.stop();
  await up?.close();
  delete process.env.REDACT_TEST_CRED;
  delete process.env.REDACT_TEST_CUSTOM;
});

const routes = [
  { name: "OpenAI chat", path: "/v1/chat/completions", body: (model: string, stream: boolean) => ({ model, stream, messages: [{ role: "user", content: "hi" }] }) },
  { name: "Anthropic messages", path: "/v1/messages", body: (model: string, stream: boolean) => ({ model, stream, max_tokens: 8, messages: [{ role: "user", content: "hi" }] }) },
  { name: "Ollama chat", path: "/api/chat", body: (model: string, stream: boolean) => ({ model, stream, messages: [{ role: "user", content: "hi" }] }) },
];

function expectClean(text: string, where: string) {
  for (const s of SECRETS) expect(text, `${where} leaks a credential`).not.toContain(s);
}

describe("upstream error text is redacted", () => {
  it("on every protocol route, streaming or not, for 401/400/500 and mid-stream errors of both provider types", async () => {
    let sent = 0;
    for (const r of routes) {
      for (const p of ["oai", "ant"]) {
        for (const mode of MODES) {
          for (const stream of [false, true]) {
            if (mode === "midstream" && !stream) continue;
            const res = await fetch(env.url + r.path, {
              method: "POST",
              headers: { authorization: `Bearer ${key.secret}`, "content-type": "application/json" },
              body: JSON.stringify(r.body(`${p}-${mode}`, stream)),
            });
            const text = await res.text();
            sent++;
            const where = `${r.name} ${p} ${mode} stream=${stream}`;
            // upstream 401 and 500 are the gateway's 502, a 400 stays the caller's 400, a mid-stream
            // error arrives after a 200
            expect(res.status, where).toBe(({ "status:401": 502, "status:400": 400, "status:500": 502, midstream: 200 } as Record<string, number>)[mode]);
            expectClean(text, where);
            // the message still says what happened, with the credential masked
            expect(text, where).toContain("[redacted]");
          }
        }
      }
    }
    // the upstream really did see (and echo) the credentials, on every one of those requests
    expect(sent).toBe(42);
    expect(up.seen.echoed).toBe(sent);

    // audit rows of those requests: none holds a credential
    let audit = "";
    const deadline = Date.now() + 10_000;
    for (;;) {
      const a = await env.api("GET", "/v1/audit-logs?limit=1000", undefined, env.adminKey);
      expect(a.status).toBe(200);
      audit = JSON.stringify(a.json);
      const chats = a.json.data.filter((e: any) => e.api_key_id === key.id);
      if (chats.length >= sent || Date.now() > deadline) break;
      await new Promise((r) => setTimeout(r, 100));
    }
    expect(JSON.parse(audit).data.filter((e: any) => e.api_key_id === key.id && e.status !== "success").length).toBeGreaterThan(0);
    expectClean(audit, "the audit log");
    // captured log lines
    // failures after the stream began are logged (with the error): redacted there too
    expect(env.svc.logs.some((l) => l.msg === "stream failed")).toBe(true);
    expectClean(JSON.stringify(env.svc.logs), "the log");
  });

  it("masks key-shaped values too (sk-…, Bearer …) in upstream text", async () => {
    const { redactSecrets } = await import("../../engines/providers/redact");
    const out = redactSecrets("bad key sk-proj-abcdefghijkl; Authorization: Bearer abc.def-ghi_123; x-api-key: qwertyuiop");
    expect(out).not.toMatch(/abcdefghijkl|abc\.def-ghi_123|qwertyuiop/);
    expect(out).toContain("Bearer [redacted]");
    // prose is left alone
    expect(redactSecrets("Token indices sequence length is longer than the maximum")).toBe("Token indices sequence length is longer than the maximum");
  });
});

// A secret given to an MCP stdio service (envFrom) that the service echoes on its stderr, split
// across two writes, never appears in the McpServer's condition message, /admin/config/status,
// `svc status` (table and JSON) or the server log: the one redactor (engines/secrets) knows every
// resolved secret value and reads the stderr tail as a whole.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import path from "node:path";
import { randomBytes } from "node:crypto";
import { startTestSvc, type TestSvc } from "../helpers/svc";
import { getText } from "../helpers/http";
import { repoRoot, runCli } from "../helpers/cli";
import { apply, mcpDoc, node, waitReason } from "../mcp/helpers";
import { redactTail } from "../../engines/secrets/redact";
import { stepOf } from "../../engines/agents/steps";

const SECRET = `leaky-${randomBytes(12).toString("hex")}`;
const HALVES = [SECRET.slice(0, SECRET.length / 2), SECRET.slice(SECRET.length / 2)];
const fixture = path.join(repoRoot, "test/mcp/fixtures/stderr-echo.mjs");

function expectClean(text: string, where: string) {
  expect(text, `${where} shows the secret`).not.toContain(SECRET);
  for (const h of HALVES) expect(text, `${where} shows half of the secret`).not.toContain(h);
}

let s: TestSvc;
beforeAll(async () => {
  process.env.SVC_LEAK_TEST_SECRET = SECRET;
  s = await startTestSvc();
  const r = await apply(s, [mcpDoc("leaky", { transport: "stdio", command: node, args: [fixture], envFrom: { LEAKY: "env:SVC_LEAK_TEST_SECRET" } })]);
  expect(r.status, r.text).toBe(200);
});
afterAll(async () => {
  await s?.stop();
  delete process.env.SVC_LEAK_TEST_SECRET;
});

describe("a stdio service echoing its envFrom secret on stderr", () => {
  it("the condition message says what happened, with the secret masked", async () => {
    const c = await waitReason(s, "leaky", "ConnectionRefused");
    expect(c.message).toMatch(/stderr ended with: .*starting with token=\[redacted\]/);
    expect(c.message).toContain("fatal: cannot reach the backend");
    expectClean(c.message, "the condition message");
  });

  it("/admin/config/status and svc status (table and JSON) do not show it", async () => {
    // svc retries the service with backoff, so a read may catch it Connecting: every read must be
    // clean, and reads repeat until one shows the failure (with its masked stderr)
    const read = async (get: () => Promise<string>, failed: (text: string) => boolean, where: string) => {
      for (let i = 0; i < 10; i++) {
        const text = await get();
        expectClean(text, where);
        if (failed(text)) return text;
      }
      throw new Error(`${where} never showed the failure`);
    };
    const st = await read(async () => (await getText(`${s.url}/admin/config/status`)).text, (t) => /"reason":"ConnectionRefused"/.test(t), "/admin/config/status");
    expect(st).toContain("[redacted]");
    const env = { SVC_HOME: s.home, SVC_PORT: String(s.port) };
    const table = await read(async () => {
      const r = await runCli(["status"], env);
      expect(r.code, r.stderr).toBe(0);
      return r.stdout + r.stderr;
    }, (t) => /McpServer\/leaky\s+False\s+ConnectionRefused/.test(t), "svc status");
    expect(table).toContain("[redacted]");
    const json = await read(async () => {
      const r = await runCli(["status", "--json"], env);
      return r.stdout + r.stderr;
    }, (t) => /"reason": "ConnectionRefused"/.test(t), "svc status --json");
    expect(json).toContain("[redacted]");
  });

  it("the server log does not show it", async () => {
    await waitReason(s, "leaky", "ConnectionRefused");
    const failed = s.logs.filter((l) => l.msg === "mcp service connection failed");
    expect(failed.length).toBeGreaterThan(0);
    expect(JSON.stringify(failed)).toContain("[redacted]");
    expectClean(JSON.stringify(s.logs), "the log");
  });
});

describe("the redactor on pieces of a stream and on step logs", () => {
  it("masks the start or end of a known secret cut by a buffer boundary", () => {
    expect(redactTail(`token=${SECRET.slice(0, 10)}`)).toBe("token=[redacted]");
    expect(redactTail(`${SECRET.slice(-9)} and more`)).toBe("[redacted] and more");
    expect(redactTail("nothing secret here")).toBe("nothing secret here");
  });

  it("a task step log entry of a tool that echoed the secret is masked", () => {
    const step = stepOf({ type: "tool_result", id: "c1", name: "svc_echo", isError: false, outcome: "ok", content: `env: LEAKY=${SECRET}` });
    expect(step.content).toBe("env: LEAKY=[redacted]");
    const call = stepOf({ type: "tool_call", id: "c1", name: "svc_echo", arguments: JSON.stringify({ text: SECRET }), mode: "auto" });
    expectClean(JSON.stringify(call), "a tool_call step");
  });
});

// What a newcomer sees: a first `svc serve` says what it is doing on stderr and ends with
// "svc listening on URL"; stdout carries JSON logs with one access line per request (request id,
// key id, route, status, latency) and never a key; `svc doctor` is content with revoked and
// expired keys; `svc` alone and `svc version` answer with exit 0.
import { readFileSync } from "node:fs";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { runCli, repoRoot } from "../helpers/cli";
import { postJson, until } from "../helpers/http";
import { tempDir } from "../helpers/svc";
import { startServeChild, type ServeChild } from "../helpers/serve-child";

const ADMIN = "sk-svc-newcomertestadminkey00000000000000000000";
const version = JSON.parse(readFileSync(path.join(repoRoot, "package.json"), "utf8")).version;

describe("a first start with the quickstart", () => {
  let s: ServeChild;
  let home: string;
  let created: { id: string; api_key: string };
  const accessLine = (requestId: string) => s.logs().find((l) => l.msg === "request" && l.requestId === requestId);
  const admin = { authorization: `Bearer ${ADMIN}` };

  beforeAll(async () => {
    home = await tempDir("svc-first-");
    s = await startServeChild(["--port", "0"], { SVC_HOME: home, SVC_ADMIN_KEY: ADMIN }, { timeoutMs: 150_000 });
  }, 180_000);
  afterAll(async () => {
    expect(await s?.stop()).toBe(0);
  });

  it("prints each start-up step on stderr, then the address; stdout holds only JSON log lines", () => {
    const lines = s.stderr().trimEnd().split("\n");
    const at = (re: RegExp) => lines.findIndex((l) => re.test(l));
    const listening = lines.indexOf(`svc listening on ${s.url}`);
    expect(listening, s.stderr()).toBeGreaterThan(0);
    const steps = [/^svc: starting /, /^svc: creating the store .*svc\.db…$/, /^svc: empty store: applying the quickstart/, /^svc: generating the built-in model .*svc-tiny\.gguf…$/];
    for (const re of steps) {
      expect(at(re), `${re} in\n${s.stderr()}`).toBeGreaterThanOrEqual(0);
      expect(at(re)).toBeLessThan(listening);
    }
    expect(s.stderr()).not.toMatch(/^\{/m); // no log lines on stderr
    const out = s.stdout().trim().split("\n");
    for (const l of out) expect(() => JSON.parse(l), l).not.toThrow();
    expect(s.stdout()).not.toContain("svc listening on");
    expect(s.logs().find((l) => l.msg === "listening")).toMatchObject({ level: "info", url: s.url });
  });

  it("writes one access line per request with request id, key id, route, status and latency, never the key", async () => {
    const made = await postJson(`${s.url}/v1/api-keys`, { name: "newcomer" }, { ...admin, "x-request-id": "newcomer-create" });
    expect(made.status, made.text).toBe(201);
    created = made.json;
    const chat = await postJson(
      `${s.url}/v1/chat/completions`,
      { model: "svc-tiny", messages: [{ role: "user", content: "hi" }], max_tokens: 2 },
      { authorization: `Bearer ${created.api_key}`, "x-request-id": "newcomer-chat" },
    );
    expect(chat.status, chat.text).toBe(200);
    await until(() => !!accessLine("newcomer-chat") && !!accessLine("newcomer-create"), 10_000);
    const line = accessLine("newcomer-chat")!;
    expect(line).toMatchObject({ level: "info", msg: "request", method: "POST", route: "/v1/chat/completions", status: 200, keyId: created.id });
    expect(typeof line.latencyMs).toBe("number");
    expect(typeof line.time).toBe("string");
    expect(accessLine("newcomer-create")).toMatchObject({ method: "POST", route: "/v1/api-keys", status: 201 });
    expect(accessLine("newcomer-create")!.keyId).toBeTruthy(); // the admin key's id, not the key
    // the first use loads the model, and says so before it starts
    expect(s.logs().some((l) => /^loading model svc-tiny from .*svc-tiny\.gguf/.test(String(l.msg)))).toBe(true);
    const all = s.stdout() + s.stderr();
    expect(all).not.toContain(created.api_key);
    expect(all).not.toContain(ADMIN);
  });

  it("never logs a credential sent in a header or a path", async () => {
    const bogus = "sk-svc-" + "Q".repeat(40) + "leaky";
    const basic = Buffer.from("someone:hunter2-very-secret-password").toString("base64");
    const placeholder = "placeholder-secret-token-1234";
    const sends: Array<[string, string, Record<string, string>]> = [
      ["secret-bearer", "/v1/chat/completions", { authorization: `Bearer ${bogus}` }],
      ["secret-xapikey", "/v1/messages", { "x-api-key": bogus }],
      ["secret-basic", "/v1/api-keys", { authorization: `Basic ${basic}` }],
      ["secret-placeholder", "/v1/chat/completions", { authorization: `Bearer ${placeholder}` }],
      ["secret-path", `/v1/nothing/${bogus}`, {}],
    ];
    for (const [id, p, headers] of sends) {
      await fetch(`${s.url}${p}`, { method: "POST", headers: { "content-type": "application/json", "x-request-id": id, ...headers }, body: JSON.stringify({ model: "nope", messages: [] }) });
    }
    await until(() => sends.every(([id]) => !!accessLine(id)), 10_000);
    expect(accessLine("secret-bearer")).toMatchObject({ status: 401, route: "/v1/chat/completions" });
    expect(accessLine("secret-bearer")!.keyId).toBeUndefined();
    expect(accessLine("secret-path")!.route).toBe("/v1/nothing/sk-svc-[redacted]");
    const all = s.stdout() + s.stderr();
    for (const secret of [bogus, basic, "hunter2-very-secret-password", placeholder]) expect(all).not.toContain(secret);
  });

  it("svc doctor reports revoked and expired keys as info and exits 0", async () => {
    const revoked = await fetch(`${s.url}/v1/api-keys/${created.id}`, { method: "DELETE", headers: admin });
    expect(revoked.status).toBe(200);
    const doc = `apiVersion: svc/v1
kind: ApiKey
metadata: {name: old-ci}
spec: {key_type: user, secretHash: "sha256:${"ab".repeat(32)}", expires_at: "2020-01-01T00:00:00Z"}
`;
    const applied = await postJson(`${s.url}/admin/config/apply`, { document: doc, wait: true, waitTimeoutSeconds: 20 });
    expect(applied.status, applied.text).toBe(200);
    const reason = async (name: string) => {
      const st: any = await (await fetch(`${s.url}/admin/config/status`)).json();
      return st.objects.find((o: any) => o.kind === "ApiKey" && o.name === name)?.ready?.reason;
    };
    // the controller reports the revocation shortly after the DELETE answered
    let reasons: unknown[] = [];
    for (let i = 0; i < 100; i++) {
      reasons = [await reason(created.id), await reason("old-ci")];
      if (reasons[0] === "Revoked" && reasons[1] === "Expired") break;
      await new Promise((r) => setTimeout(r, 200));
    }
    expect(reasons).toEqual(["Revoked", "Expired"]);

    const r = await runCli(["doctor"], { SVC_HOME: home, SVC_PORT: String(new URL(s.url).port) });
    expect(r.code, r.stdout + r.stderr).toBe(0);
    expect(r.stdout).toMatch(/^\[info\] 2 API keys are revoked or expired, kept for the audit log: /m);
    expect(r.stdout).toContain(`${created.id} (revoked)`);
    expect(r.stdout).toContain("old-ci (expired)");
    expect(r.stdout).not.toContain("[FAIL]");
    expect(r.stdout).toMatch(/No problems found\./);
  }, 60_000);
});

describe("--log-level", () => {
  it("warn drops info lines (access lines included); the flag beats SVC_LOG_LEVEL", async () => {
    const home = await tempDir("svc-level-");
    const s = await startServeChild(["--port", "0", "--no-quickstart", "--log-level", "warn"], { SVC_HOME: home, SVC_LOG_LEVEL: "debug" });
    let code: number | null;
    try {
      expect((await fetch(`${s.url}/health`, { headers: { "x-request-id": "quiet-1" } })).status).toBe(200);
    } finally {
      code = await s.stop();
    }
    expect(code).toBe(0);
    expect(s.stderr()).toContain(`svc listening on ${s.url}`); // progress and the address still show
    expect(s.logs().filter((l) => l.level === "info" || l.level === "debug")).toEqual([]);
    expect(s.stdout()).not.toContain("quiet-1");
  }, 120_000);

  it("an unknown level is refused with the accepted values", async () => {
    const r = await runCli(["serve", "--log-level", "loud"], { SVC_HOME: await tempDir("svc-level-") });
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/--log-level must be one of fatal, error, warn, info, debug, trace, silent \(got "loud"\)/);
    const e = await runCli(["serve"], { SVC_HOME: await tempDir("svc-level-"), SVC_LOG_LEVEL: "chatty" });
    expect(e.code).toBe(1);
    expect(e.stderr).toMatch(/SVC_LOG_LEVEL must be one of/);
  }, 60_000);
});

describe("svc alone and svc version", () => {
  it("`svc` with no arguments prints the help and exits 0", async () => {
    const r = await runCli([]);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toMatch(/^Usage: svc /m);
    for (const c of ["serve", "config", "status", "doctor", "keys", "models", "version"]) expect(r.stdout).toMatch(new RegExp(`^  ${c}\\b`, "m"));
  });

  it("`svc version` and `svc --version` print the package version", async () => {
    const r = await runCli(["version"]);
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(new RegExp(`^svc ${version.replace(/\./g, "\\.")} \\(Node v\\d+`));
    const v = await runCli(["--version"]);
    expect(v.stdout.trim()).toBe(version);
  });

  it("a command group alone (`svc keys`) shows its commands and exits 0", async () => {
    const r = await runCli(["keys"]);
    expect(r.code).toBe(0);
    expect(r.stdout + r.stderr).toMatch(/generate.*\n.*\n?.*list/);
  });
});

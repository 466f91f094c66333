// Audit entries survive SIGTERM under load: a real `svc serve` process, requests in flight
// at a slow upstream when the signal arrives; the server lets them finish, and after exit
// every request that got an answer has its audit row.
import { createServer, type Server } from "node:http";
import { mkdirSync, writeFileSync } from "node:fs";
import path from "node:path";
import Database from "better-sqlite3";
import OpenAI from "openai";
import { afterAll, describe, expect, it } from "vitest";
import { tempDir } from "../helpers/svc";
import { until } from "../helpers/http";
import { startServeChild } from "../helpers/serve-child";

const ADMIN = "sk-svc-sigtermtestadminkey000000000000000000000";

/** An OpenAI-style upstream that answers after 300 ms, counting requests received. */
async function slowUpstream() {
  let received = 0;
  const server: Server = createServer((req, res) => {
    req.resume();
    req.on("end", () => {
      received++;
      setTimeout(() => {
        res.writeHead(200, { "content-type": "application/json" });
        res.end(JSON.stringify({ id: "x", object: "chat.completion", created: 1, model: "m", choices: [{ index: 0, message: { role: "assistant", content: "ok" }, finish_reason: "stop" }], usage: { prompt_tokens: 3, completion_tokens: 1, total_tokens: 4 } }));
      }, 300);
    });
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  const port = (server.address() as { port: number }).port;
  return { baseUrl: `http://127.0.0.1:${port}/v1`, received: () => received, close: () => new Promise<void>((r) => server.close(() => r())) };
}
let up: Awaited<ReturnType<typeof slowUpstream>> | undefined;
afterAll(async () => up?.close());

describe("audit log under SIGTERM", () => {
  it("keeps an entry for every answered request when the server is stopped mid-load", async () => {
    up = await slowUpstream();
    const home = await tempDir("svc-sigterm-");
    const cfg = path.join(home, "cfg");
    mkdirSync(cfg);
    writeFileSync(path.join(cfg, "p.yaml"), `apiVersion: svc/v1
kind: Provider
metadata: {name: standin}
spec: {type: openai, baseUrl: "${up.baseUrl}", models: [{name: gpt-standin, inputPerMillion: 1, outputPerMillion: 2}]}
`);
    const { url, child, exited } = await startServeChild(["--port", "0", "--config", cfg, "--no-quickstart"], { SVC_HOME: home, SVC_ADMIN_KEY: ADMIN });

    const created: any = await (await fetch(`${url}/v1/api-keys`, {
      method: "POST",
      headers: { authorization: `Bearer ${ADMIN}`, "content-type": "application/json" },
      body: JSON.stringify({ name: "load", key_type: "user", budget_limits: { monthly: 100 } }),
    })).json();
    const client = new OpenAI({ apiKey: created.api_key, baseURL: `${url}/v1`, maxRetries: 0 });
    const ask = () => client.chat.completions.create({ model: "gpt-standin", messages: [{ role: "user", content: "hi" }] });

    // A first wave completes; a second is waiting at the upstream when SIGTERM arrives.
    const first = await Promise.allSettled(Array.from({ length: 40 }, ask));
    const second = Array.from({ length: 40 }, ask).map((p) => p.then(() => "ok", () => "failed"));
    await until(() => up!.received() >= 70, 10_000);
    child.kill("SIGTERM");
    const outcomes = await Promise.all(second);
    expect(await exited).toBe(0);

    const answered = first.filter((r) => r.status === "fulfilled").length + outcomes.filter((o) => o === "ok").length;
    expect(first.every((r) => r.status === "fulfilled")).toBe(true);
    expect(outcomes.filter((o) => o === "ok").length).toBeGreaterThanOrEqual(30); // in-flight requests were let finish
    const db = new Database(path.join(home, "svc.db"), { readonly: true });
    try {
      const row = db.prepare(`SELECT count(*) AS n FROM AuditEntry WHERE apiKeyId = ? AND action = 'chat.completions' AND status = 'success'`).get(created.id) as { n: number };
      expect(row.n).toBe(answered);
    } finally {
      db.close();
    }
  });
});

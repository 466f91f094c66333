// No answered request without its audit row in shared mode: a replica (its own process) serving a
// keyed load is killed with SIGKILL; once it is started again on its data dir, every request it
// had answered has its audit row in PostgreSQL.
import { describe, it, expect, beforeAll, afterAll } from "vitest";
import { missingServices } from "../helpers/services";
import { tempDir } from "../helpers/svc";
import { startServeChild, type ServeChild } from "../helpers/serve-child";
import { provider, standIn, type StandIn } from "../gateway/fixtures";
import { startShared, startReplica, everywhere, type Shared, type Replica } from "./cluster";

const missing = missingServices();
if (missing) console.warn(`test/scale skipped: ${missing}`);

describe.skipIf(!!missing)("kill -9 of a replica under load", () => {
  let shared: Shared;
  let up: StandIn;
  let r0: Replica;
  let child: ServeChild | undefined;

  beforeAll(async () => {
    up = await standIn({ promptTokens: 2, completionTokens: 5 });
    shared = await startShared();
    r0 = await startReplica();
    await r0.svc.svc.store.write([{ op: "upsert", kind: "Provider", name: "up", owner: "config:test", spec: provider("up", up, [{ name: "gpt-x", inputPerMillion: 1, outputPerMillion: 1 }]).spec }]);
    await everywhere([r0], "Provider", "up");
  }, 120_000);

  afterAll(async () => {
    await child?.kill9().catch(() => undefined);
    await r0?.svc.stop().catch(() => undefined);
    await shared?.stop();
    await up?.close();
  });

  it("every request it answered has its audit row after the restart", async () => {
    const home = await tempDir("svc-audit-crash-");
    const env = { ...shared.env, SVC_HOME: home };
    child = await startServeChild(["--port", "0", "--no-quickstart"], env);
    const k = await r0.api("POST", "/v1/api-keys", { name: "crash", budget_limits: { total: 1000 } });
    expect(k.status).toBe(201);
    const ask = (id: string) =>
      fetch(`${child!.url}/v1/chat/completions`, {
        method: "POST",
        headers: { authorization: `Bearer ${k.json.api_key}`, "content-type": "application/json", "x-request-id": id },
        body: JSON.stringify({ model: "gpt-x", messages: [{ role: "user", content: "hi" }] }),
      });
    // the child knows the provider and the key once it answers 200
    for (let i = 0; ; i++) {
      if ((await ask(`warm-${i}`).catch(() => null))?.status === 200) break;
      if (i > 200) throw new Error("the child replica never served the key");
      await new Promise((r) => setTimeout(r, 50));
    }
    const answered: string[] = [];
    let n = 0;
    let dead = false;
    const loops = Array.from({ length: 8 }, async () => {
      while (!dead) {
        const id = `crash-${++n}`;
        const r = await ask(id).catch(() => null);
        if (!r) return;
        if (r.status === 200) {
          await r.json();
          answered.push(id);
        }
      }
    });
    while (answered.length < 300) await new Promise((r) => setTimeout(r, 10));
    await child.kill9();
    dead = true;
    await Promise.all(loops);
    expect(answered.length).toBeGreaterThanOrEqual(300);

    child = await startServeChild(["--port", "0", "--no-quickstart"], env); // recovers its journal before it listens
    const p = r0.svc.svc.db.prisma;
    const rows = await p.auditEntry.findMany({ where: { requestId: { in: answered } }, select: { requestId: true, status: true } });
    const have = new Set(rows.map((r) => r.requestId));
    expect(answered.filter((id) => !have.has(id))).toEqual([]);
    expect(rows.every((r) => r.status === "success")).toBe(true);
  });
});

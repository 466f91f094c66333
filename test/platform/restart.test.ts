// Restart keeping state: stop, start again on the same data dir; objects, revision and status persist.
import { describe, expect, it } from "vitest";
import { startTestSvc, tempDir } from "../helpers/svc";
import { postJson, until } from "../helpers/http";

describe("restart", () => {
  it("keeps objects, revision and status across a stop and start on the same home", async () => {
    const home = await tempDir("svc-restart-");
    const docs =
      "apiVersion: svc/v1\nkind: Agent\nmetadata:\n  name: keeper\nspec:\n  instructions: stay\n---\n" +
      "apiVersion: svc/v1\nkind: MemoryConfig\nmetadata:\n  name: default\nspec:\n  memoryBudgetTokens: 9000\n";
    const a = await startTestSvc({ home });
    const r = await postJson(`${a.url}/admin/config/apply`, { document: docs, wait: true, waitTimeoutSeconds: 10 });
    expect(r.status).toBe(200);
    expect(r.json.plan.warnings.length).toBeGreaterThan(0); // 9000 clamped to 4000, with a warning
    const before = {
      revision: a.svc.store.revision,
      agent: structuredClone(a.svc.store.get("Agent", "keeper")!),
      memory: structuredClone(a.svc.store.get("MemoryConfig", "default")!),
    };
    expect(before.agent.status.observedGeneration).toBe(1);
    await a.stop();

    const b = await startTestSvc({ home });
    try {
      expect(b.svc.store.revision).toBe(before.revision);
      const agent = b.svc.store.get("Agent", "keeper")!;
      expect(agent).toMatchObject({ uid: before.agent.uid, generation: 1, spec: before.agent.spec, owner: "config:default" });
      // status was persisted (flushed on stop) and is there before any reconcile rewrites it
      expect(agent.status.conditions![0]).toEqual(before.agent.status.conditions![0]);
      expect(b.svc.store.get("MemoryConfig", "default")!.spec.memoryBudgetTokens).toBe(9000); // kept as written
      expect(b.svc.engines.memory!.configure().memoryBudgetTokens).toBe(4000); // in force: clamped
      await until(() => b.svc.store.get("Agent", "keeper")!.status.observedGeneration === 1);
      // the condition did not flip, so its lastTransitionTime is the one from before the restart
      expect(b.svc.store.get("Agent", "keeper")!.status.conditions![0].lastTransitionTime).toBe(before.agent.status.conditions![0].lastTransitionTime);
      const p = await postJson(`${b.url}/admin/config/plan`, { document: docs });
      expect(p.json.exitCode).toBe(0);
    } finally {
      await b.stop();
    }
  });
});

// examples/agents apply as they are next to the quickstart, and the local agent runs end to end.
import { describe, it, expect, afterAll } from "vitest";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { startTestSvc, tempDir, type TestSvc } from "../helpers/svc";
import { quickstartDir } from "../../boot/start";
import { ensureTinyModel } from "../../engines/inference";
import { until } from "../helpers/http";

const agentsDir = fileURLToPath(new URL("../../examples/agents/", import.meta.url));
let s: TestSvc | undefined;
afterAll(async () => {
  await s?.stop();
});

describe("examples/agents", () => {
  it("apply with the quickstart; both agents are Ready and the local one answers", async () => {
    const home = await tempDir("svc-agents-examples-");
    await ensureTinyModel(path.join(home, "models"));
    s = await startTestSvc({ home, config: [quickstartDir, agentsDir], resyncMs: 0 });
    const cond = (n: string) => s!.svc.store.get("Agent", n)?.status.conditions?.find((c) => c.type === "Ready");
    await until(() => cond("helper")?.status === "True" && cond("researcher")?.status === "True", 20_000).catch(() => {
      throw new Error(JSON.stringify([cond("helper"), cond("researcher")]));
    });
    const list = await fetch(`${s.url}/agents`).then((r) => r.json() as Promise<any>);
    expect(list.data.map((a: any) => a.id)).toEqual(["helper", "researcher"]);
    const r = await fetch(`${s.url}/agents/helper/run`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ prompt: "hello" }) });
    const j: any = await r.json();
    expect(r.status, JSON.stringify(j)).toBe(200);
    expect(j).toMatchObject({ agent: "helper", model: "svc-tiny" });
    expect(["completed", "incomplete"]).toContain(j.status);
  }, 60_000);
});

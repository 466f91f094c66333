// An Agent on a local Model is Ready only once the Model is registered in the pool. The router
// knows the Model from its store write on; the pool only after the Model controller has checked
// the file. An Agent reconciled in between used to say Ready, and a run then failed with
// "no local model named ..." (seen as a 503 in CI under load).
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestSvc, type TestSvc } from "../helpers/svc";
import { postJson, until } from "../helpers/http";
import { writeTinyGguf } from "../../engines/inference/gguf";

let s: TestSvc;
beforeAll(async () => {
  s = await startTestSvc();
});
afterAll(async () => {
  await s?.stop();
});

const ready = (kind: string, name: string) => s.svc.store.get(kind, name)?.status?.conditions?.find((c) => c.type === "Ready");
const doc = `apiVersion: svc/v1\nkind: Model\nmetadata:\n  name: m\nspec:\n  file: real.gguf\n  threads: 1\n---\napiVersion: svc/v1\nkind: Agent\nmetadata:\n  name: helper\nspec:\n  instructions: be brief\n  defaultModel: m\n`;

describe("an Agent on a local Model not yet registered", () => {
  it("is not Ready and refuses a run by naming the model, until the Model controller has registered it", async () => {
    await writeTinyGguf(path.join(s.svc.modelsDir, "real.gguf"), "tiny");
    const r = await postJson(`${s.url}/admin/config/apply`, { document: doc, source: "reg", wait: true, waitTimeoutSeconds: 20 });
    expect(r.json.wait.ready).toBe(true);
    // the state between the Model's store write and its controller's first check of the file
    s.svc.engines.pool!.unregister("m");
    s.svc.control!.enqueue({ kind: "Agent", name: "helper" });
    await until(() => ready("Agent", "helper")?.reason === "ModelNotReady");
    expect(ready("Agent", "helper")!.message).toMatch(/local model "m" is not registered yet/);
    const run = await postJson(`${s.url}/agents/helper/run`, { prompt: "hi" });
    expect(run.status).toBe(503);
    expect(JSON.stringify(run.json)).toMatch(/not registered yet/);
    // the Model's reconcile registers it again; the Agent follows
    s.svc.control!.enqueue({ kind: "Model", name: "m" });
    await until(() => s.svc.engines.pool!.has("m"));
    await until(() => ready("Agent", "helper")?.status === "True", 15_000);
  }, 40_000);
});

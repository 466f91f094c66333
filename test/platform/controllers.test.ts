// Controllers inside a running server: truthful conditions at the current generation, cleanup
// on delete, and the Server controller moving the listener.
import path from "node:path";
import { readFile, writeFile } from "node:fs/promises";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestSvc, tempDir, type TestSvc } from "../helpers/svc";
import { postJson, until } from "../helpers/http";
import { writeTinyGguf } from "../../engines/inference/gguf";

const ready = (s: TestSvc, kind: string, name: string) => s.svc.store.get(kind, name)?.status?.conditions?.find((c) => c.type === "Ready");
const observedCurrent = (s: TestSvc, kind: string, name: string) => {
  const o = s.svc.store.get(kind, name);
  return !!o && o.status.observedGeneration === o.generation;
};

describe("object conditions", () => {
  let s: TestSvc;
  beforeAll(async () => {
    s = await startTestSvc();
  });
  afterAll(async () => {
    await s?.stop();
  });
  const apply = (document: string, extra: object = {}) => postJson(`${s.url}/admin/config/apply`, { document, source: "cond", ...extra });
  const model = (file: string) => `apiVersion: svc/v1\nkind: Model\nmetadata:\n  name: m\nspec:\n  file: ${file}\n  threads: 1\n`;
  const agent = `apiVersion: svc/v1\nkind: Agent\nmetadata:\n  name: helper\nspec:\n  instructions: be brief\n  defaultModel: m\n`;

  it("a Model with a missing file is not Ready; pointing it at a real GGUF makes it Ready; an Agent on it names the model that is not ready", async () => {
    const r = await apply(model("missing.gguf") + "---\n" + agent, { wait: true, waitTimeoutSeconds: 1 });
    expect(r.status).toBe(200);
    await until(() => observedCurrent(s, "Model", "m") && observedCurrent(s, "Agent", "helper"));
    expect(ready(s, "Model", "m")).toMatchObject({ status: "False" });
    expect(ready(s, "Model", "m")!.message).toMatch(/missing\.gguf/);
    await until(() => ready(s, "Agent", "helper")?.reason === "ModelNotReady");
    expect(ready(s, "Agent", "helper")!.message).toMatch(/local model "m" is not ready: .*missing\.gguf/);
    // --wait does not call a missing file ready
    expect(r.json.wait.ready).toBe(false);

    await writeTinyGguf(path.join(s.svc.modelsDir, "real.gguf"), "tiny");
    const r2 = await apply(model("real.gguf") + "---\n" + agent, { wait: true, waitTimeoutSeconds: 20 });
    expect(r2.json.wait.ready).toBe(true);
    const m = s.svc.store.get("Model", "m")!;
    expect(m.generation).toBe(2);
    expect(m.status.observedGeneration).toBe(2);
    expect(ready(s, "Model", "m")).toMatchObject({ status: "True" });
    await until(() => ready(s, "Agent", "helper")?.status === "True"); // follows the Model's status
  });

  it("deleting runs the controller's cleanup and then purges the object", async () => {
    const pool = s.svc.engines.pool!;
    expect(pool.list().some((x) => x.name === "m")).toBe(true);
    // prune deletes only kinds the document declares: keep one other Model so Model/m goes
    const other = model("real.gguf").replace("name: m\n", "name: m2\n");
    const r = await apply(other + "---\n" + agent, { prune: true, confirm: true, wait: true, waitTimeoutSeconds: 20 });
    expect(r.status).toBe(200);
    expect(r.json.wait.objects).toContainEqual(expect.objectContaining({ kind: "Model", name: "m", state: "deleted" }));
    expect(s.svc.store.get("Model", "m")).toBeUndefined();
    expect(pool.list().some((x) => x.name === "m")).toBe(false); // finalize unregistered it
    const rows = await s.svc.db.prisma.resource.findMany({ where: { kind: "Model", name: "m" } });
    expect(rows).toHaveLength(0);
  });
});

describe("Server controller", () => {
  it("binds where the Server manifest says and moves when it changes; server.json follows", async () => {
    // No free-port-then-bind race: the first manifest asks for any port (0) and the kernel picks
    // one; the move keeps that port number and changes the address to [::1], so the port the
    // manifest names is one this process already holds on 127.0.0.1 and nobody else can take it.
    const dir = await tempDir("svc-srv-");
    const server = (spec: string) => `apiVersion: svc/v1\nkind: Server\nmetadata:\n  name: local\nspec:\n${spec}`;
    await writeFile(path.join(dir, "server.yaml"), server("  port: 0\n  exposure: loopback\n  host: 0.0.0.0\n"));
    const s = await startTestSvc({ port: undefined, host: undefined, config: [path.join(dir, "server.yaml")] });
    try {
      const p1 = s.port;
      expect(p1).toBeGreaterThan(0);
      expect(s.host).toBe("127.0.0.1"); // exposure loopback wins over host 0.0.0.0
      await until(() => ready(s, "Server", "local")?.status === "True");
      expect(ready(s, "Server", "local")!.message).toBe(`listening on http://127.0.0.1:${p1}`);

      const moved = server(`  port: ${p1}\n  exposure: network\n  host: "::1"\n`);
      const r = await postJson(`http://127.0.0.1:${p1}/admin/config/apply`, { document: moved, source: "startup", wait: true, waitTimeoutSeconds: 10 });
      expect(r.status).toBe(200);
      expect(r.json.wait.ready).toBe(true);
      expect(s.host).toBe("::1");
      expect(s.port).toBe(p1);
      expect((await fetch(`http://[::1]:${p1}/health`)).status).toBe(200);
      await expect(fetch(`http://127.0.0.1:${p1}/health`)).rejects.toThrow(); // the old socket is closed
      await until(() => ready(s, "Server", "local")?.message === `listening on http://[::1]:${p1}`);
      await until(() => s.svc.server.host === "::1");
      const info = JSON.parse(await readFile(path.join(s.home, "server.json"), "utf8"));
      expect(info).toMatchObject({ pid: process.pid, port: p1, url: `http://[::1]:${p1}` });
    } finally {
      await s.stop();
    }
  });

  it("an explicit start port beats the manifest and says so", async () => {
    const s = await startTestSvc();
    try {
      const r = await postJson(`${s.url}/admin/config/apply`, {
        document: "apiVersion: svc/v1\nkind: Server\nmetadata:\n  name: local\nspec:\n  port: 1\n",
        wait: true,
        waitTimeoutSeconds: 10,
      });
      expect(r.json.wait.ready).toBe(true);
      expect(ready(s, "Server", "local")!.message).toMatch(new RegExp(`listening on http://127.0.0.1:${s.port} \\(port from start option overrides spec.port 1; host from start option\\)`));
    } finally {
      await s.stop();
    }
  });
});

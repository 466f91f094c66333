// First start on an empty store applies examples/quickstart and generates the built-in model;
// a store that has objects is left alone. The example sets validate as they are.
import path from "node:path";
import { existsSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { startTestSvc, tempDir } from "../helpers/svc";
import { until } from "../helpers/http";
import { loadPaths } from "../../manifests";
import { jsonLogger } from "../../boot/start";

describe("quickstart", () => {
  it("applies examples/quickstart on an empty store, with the generated model Ready", async () => {
    const home = await tempDir("svc-qs-");
    const s = await startTestSvc({ home, quickstart: true });
    try {
      expect(s.svc.store.list().map((o) => `${o.kind}/${o.name}`).sort()).toEqual(["MemoryConfig/default", "Model/svc-tiny", "Server/local"]);
      expect(s.svc.store.get("Model", "svc-tiny")!.owner).toBe("config:quickstart");
      expect(existsSync(path.join(s.svc.modelsDir, "svc-tiny.gguf"))).toBe(true);
      await until(() => s.svc.store.get("Model", "svc-tiny")!.status.conditions?.[0]?.status === "True", 20_000);
      expect(s.svc.server).toMatchObject({ host: "127.0.0.1", port: 1337, exposure: "loopback", allowUnauthenticatedLoopback: true });
    } finally {
      await s.stop();
    }
    // second start: the store is not empty, nothing is re-applied
    const again = await startTestSvc({ home, quickstart: true });
    try {
      expect(again.logs.some((l) => String(l.msg).includes("applied the quickstart"))).toBe(false);
    } finally {
      await again.stop();
    }
  });

  it("examples/quickstart and examples/gateway validate", async () => {
    for (const dir of ["examples/quickstart", "examples/gateway"]) {
      const r = await loadPaths([path.resolve(dir)]);
      expect(r.issues, dir).toEqual([]);
      expect(r.objects.length).toBeGreaterThanOrEqual(3);
    }
  });
});

describe("log lines", () => {
  it("are one JSON object per line and never carry secrets", () => {
    const lines: string[] = [];
    const log = jsonLogger({ write: (l) => lines.push(l) });
    log.info("request", { authorization: "Bearer sk-svc-abcdef", headers: { "x-api-key": "k", Authorization: "Bearer x" }, note: "key sk-svc-XYZ123 used", tokens: 12 });
    expect(lines).toHaveLength(1);
    const j = JSON.parse(lines[0]);
    expect(j).toMatchObject({ level: "info", msg: "request", authorization: "[redacted]", tokens: 12 });
    expect(j.headers).toEqual({ "x-api-key": "[redacted]", Authorization: "[redacted]" });
    expect(lines[0]).not.toMatch(/sk-svc-(abcdef|XYZ123)/);
  });
});

// One svc connected to another svc's /mcp as an McpServer: the tool annotations travel with the
// tools, so the second svc's exposure policy sees the first one's read-only tools as read-only
// (readOnly exposure by default) instead of dropping them as not exposable.
import { writeFile } from "node:fs/promises";
import path from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { startTestSvc, tempDir, type TestSvc } from "../helpers/svc";
import { until } from "../helpers/http";

const started: TestSvc[] = [];
afterAll(async () => {
  for (const s of started.reverse()) await s.stop();
});

describe("an McpServer pointed at another svc's /mcp", () => {
  it("sees the other svc's read-only tools as read-only and exposes them by default", async () => {
    const a = await startTestSvc();
    started.push(a);
    const dir = await tempDir("svc-mcp-peer-");
    await writeFile(
      path.join(dir, "peer.yaml"),
      `apiVersion: svc/v1\nkind: McpServer\nmetadata: {name: peer}\nspec:\n  transport: http\n  url: ${a.url}/mcp\n  discoveryTimeoutSeconds: 20\n`,
    );
    const b = await startTestSvc({ config: [dir] });
    started.push(b);
    // svc A's tools/list now carries annotations: svc_time is read-only
    const listed = await fetch(`${a.url}/mcp/tools`).then((r) => r.json() as Promise<any>);
    expect(listed.tools.find((t: any) => t.name === "svc_time")?.annotations).toEqual({ readOnlyHint: true });
    let names: string[] = [];
    await until(() => {
      void fetch(`${b.url}/mcp/tools`).then((r) => r.json() as Promise<any>).then((j) => (names = j.tools.map((t: any) => t.name)), () => undefined);
      return names.includes("peer_svc_time");
    }, 20_000, 200);
    expect(names).toContain("peer_svc_time");
    const call = await fetch(`${b.url}/mcp/call`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ name: "peer_svc_time", arguments: {} }) });
    expect(call.status).toBe(200);
    expect(((await call.json()) as any).ok).toBe(true);
  }, 60_000);
});

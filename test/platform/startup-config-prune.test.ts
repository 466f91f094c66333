// `svc serve --config DIR` is the whole desired state of source "startup": what it no longer
// declares is deleted at the next start, as the start-up line says, whatever the kind.
import path from "node:path";
import { rm, writeFile } from "node:fs/promises";
import { describe, expect, it } from "vitest";
import { startTestSvc, tempDir } from "../helpers/svc";

const agent = (name: string) => `apiVersion: svc/v1\nkind: Agent\nmetadata:\n  name: ${name}\nspec:\n  instructions: x\n`;
const policy = (name: string) => `apiVersion: svc/v1\nkind: AccessPolicy\nmetadata: {name: ${name}}\nspec:\n  version: "2024-01-01"\n  statements: []\n`;

describe("serve --config", () => {
  it("a file removed from the start-up config removes its objects at the next start, whatever their kind", async () => {
    const home = await tempDir("svc-su-");
    const dir = await tempDir("svc-su-m-");
    await writeFile(path.join(dir, "agent.yaml"), agent("a"));
    await writeFile(path.join(dir, "policy.yaml"), policy("p"));
    let s = await startTestSvc({ home, config: [dir] });
    expect(s.svc.store.get("AccessPolicy", "p")).toBeTruthy();
    await s.stop();
    await rm(path.join(dir, "policy.yaml"));
    s = await startTestSvc({ home, config: [dir] });
    try {
      expect(s.svc.store.get("Agent", "a")).toBeTruthy();
      expect(s.svc.store.list({ kind: "AccessPolicy" })).toHaveLength(0);
    } finally {
      await s.stop();
    }
  });
});

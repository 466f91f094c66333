// `svc serve --config DIR` says at start what it does: DIR is applied as source "startup" with
// prune and confirmation, and an empty store then gets no quickstart.
import { writeFile } from "node:fs/promises";
import path from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { startServeChild, type ServeChild } from "../helpers/serve-child";
import { tempDir } from "../helpers/svc";

let child: ServeChild | undefined;
afterAll(async () => {
  await child?.stop();
});

describe("svc serve --config", () => {
  it("announces the start-up apply with prune and confirmation, and that the quickstart is skipped", async () => {
    const home = await tempDir("svc-serve-config-");
    const dir = await tempDir("svc-serve-config-m-");
    await writeFile(path.join(dir, "policy.yaml"), "apiVersion: svc/v1\nkind: AccessPolicy\nmetadata: {name: p}\nspec:\n  version: \"2024-01-01\"\n  statements: []\n");
    child = await startServeChild(["--port", "0", "--home", home, "--config", dir]);
    expect(child.stderr()).toContain(`applying start-up config ${dir} as source "startup" (with prune: objects of that source it no longer declares are deleted; high-risk changes are confirmed)`);
    expect(child.stderr()).toContain("start-up config: 1 change applied; the quickstart is not applied (the store is not empty)");
  }, 60_000);
});

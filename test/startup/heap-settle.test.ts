// Memory at rest (issue 43): once svc is idle after start-up or a model load, it asks V8 for one
// memory-reducing collection (engines/heap-settle.ts) instead of keeping a grown young generation
// and emptied old-space pages until V8's own memory reducer runs, 8 s or more later.
import { getHeapSpaceStatistics, setFlagsFromString } from "node:v8";
import { describe, expect, it } from "vitest";
import { collect, settleWhenIdle } from "../../engines/heap-settle";
import { until } from "../helpers/http";

const MB = 2 ** 20;
const newSpace = () => getHeapSpaceStatistics().find((s) => s.space_name === "new_space")!.physical_space_size;

/** Grow V8's young generation: many objects that survive a few scavenges, then dropped. */
function growYoungGeneration(): number {
  setFlagsFromString("--semi-space-growth-factor=2"); // V8's default (svc's loads hold it at 1)
  let keep: object[] | null = [];
  for (let round = 0; round < 8 && newSpace() <= 4 * MB; round++) for (let i = 0; i < 500_000; i++) keep.push({ i });
  keep = null;
  return newSpace();
}

describe("heap settle", () => {
  it("the collection it asks for shrinks a grown young generation", async () => {
    const grown = growYoungGeneration();
    expect(grown).toBeGreaterThan(4 * MB);
    await collect();
    expect(newSpace()).toBeLessThan(2 * MB);
  });

  it("runs once the event loop has been idle for a second, not while it is busy", async () => {
    const grown = growYoungGeneration();
    expect(grown).toBeGreaterThan(4 * MB);
    settleWhenIdle();
    // a busy loop (a second and a half of work in slices) keeps it waiting
    const busyUntil = Date.now() + 1500;
    while (Date.now() < busyUntil) {
      const end = Date.now() + 40;
      while (Date.now() < end);
      await new Promise((r) => setImmediate(r));
    }
    expect(newSpace()).toBeGreaterThan(4 * MB);
    // then an idle second: settled (V8's own reducer would take 8 s or more)
    await until(() => newSpace() < 2 * MB, 5000, 50);
  });
});

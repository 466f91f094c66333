// Loaded into a benchmarked svc with `node --expose-gc --import bench/gc-probe.mjs` (bench/soak.ts,
// bench/footprint.ts): on SIGUSR2 it forces a full collection and writes process.memoryUsage()
// as JSON to SVC_GC_PROBE_FILE, so a bench reads the heap that is really live, from outside.
import { writeFileSync } from "node:fs";

const file = process.env.SVC_GC_PROBE_FILE;
if (file && typeof globalThis.gc === "function") {
  process.on("SIGUSR2", () => {
    globalThis.gc();
    writeFileSync(`${file}.tmp`, JSON.stringify(process.memoryUsage()));
    writeFileSync(file, JSON.stringify(process.memoryUsage()));
  });
}

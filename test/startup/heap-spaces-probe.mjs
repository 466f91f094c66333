// `node --import ./heap-spaces-probe.mjs …`: on SIGUSR2, writes V8's heap spaces (physical and
// used bytes, no collection first) as JSON to SVC_HEAP_SPACES_FILE (young-gen.test.ts reads it).
import { writeFileSync, renameSync } from "node:fs";
import { getHeapSpaceStatistics } from "node:v8";

const file = process.env.SVC_HEAP_SPACES_FILE;
if (file) {
  process.on("SIGUSR2", () => {
    const spaces = Object.fromEntries(getHeapSpaceStatistics().map((s) => [s.space_name, { physical: s.physical_space_size, used: s.space_used_size }]));
    writeFileSync(`${file}.tmp`, JSON.stringify(spaces));
    renameSync(`${file}.tmp`, file);
  });
}

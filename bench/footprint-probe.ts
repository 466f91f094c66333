// Reading a benchmarked process's memory from outside (bench/soak.ts, bench/footprint.ts):
// resident memory and threads from /proc, the heap after a forced collection from
// bench/gc-probe.mjs loaded into it.
import { existsSync, readFileSync, rmSync } from "node:fs";
import path from "node:path";
import { root, sleep } from "./processes";

export const MB = 1024 * 1024;
export const mb = (bytes: number) => `${(bytes / MB).toFixed(0)} MB`;

/** Resident memory (bytes) and thread count of `pid` (Linux /proc). */
export function residentOf(pid: number): { rss: number; threads: number } {
  const s = readFileSync(`/proc/${pid}/status`, "utf8");
  const field = (name: string) => Number(new RegExp(`^${name}:\\s+(\\d+)`, "m").exec(s)?.[1] ?? NaN);
  return { rss: field("VmRSS") * 1024, threads: field("Threads") };
}

/** node arguments and environment that let heapAfterGc read a process's heap. */
export function gcProbe(file: string): { nodeArgs: string[]; env: Record<string, string> } {
  return { nodeArgs: ["--expose-gc", "--import", path.join(root, "bench/gc-probe.mjs")], env: { SVC_GC_PROBE_FILE: file } };
}

/** process.memoryUsage() of `pid` right after a forced full collection. */
export async function heapAfterGc(pid: number, file: string): Promise<NodeJS.MemoryUsage> {
  rmSync(file, { force: true });
  process.kill(pid, "SIGUSR2");
  for (let i = 0; i < 100 && !existsSync(file); i++) await sleep(50);
  return JSON.parse(readFileSync(file, "utf8"));
}

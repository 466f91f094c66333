// CPU time of another process in nanoseconds: the sum of its threads' run time from
// /proc/<pid>/task/*/schedstat (Linux). /proc/<pid>/stat counts in 10 ms ticks, too coarse for
// one request; schedstat is exact, but forgets threads that have exited (svc's are long-lived:
// the event loop, libuv's pool and llama.cpp's).
import { readdirSync, readFileSync } from "node:fs";

export function cpuNanos(pid: number | undefined): number | undefined {
  if (!pid) return undefined;
  try {
    let sum = 0;
    for (const t of readdirSync(`/proc/${pid}/task`)) {
      try {
        sum += Number(readFileSync(`/proc/${pid}/task/${t}/schedstat`, "utf8").split(" ")[0]);
      } catch {} // the thread exited between the listing and the read
    }
    return sum;
  } catch {
    return undefined;
  }
}

// One memory-reducing collection once svc goes idle after start-up or a model load (issue 43,
// memory at rest). V8 shrinks its young generation and hands emptied old-space pages back only in
// a memory-reducing collection, which its memory reducer starts 8 s or more after a full
// collection, once the allocation rate has stayed low for 5 s: an idle server dropped 3-6 MB of
// resident memory 8-14 s after its model's first answer, and held them until then. Browsers tell
// V8 when they are idle; Node does not, so svc asks once itself, through the inspector's
// HeapProfiler.collectGarbage (in process, no port): V8's low-memory collection. It waits for a
// second in which the event loop was idle (under 2% busy: a request, a stream or a load in
// progress keeps it waiting), runs once however often it was asked meanwhile, and pauses the
// loop for ~20-60 ms.
import { performance, type EventLoopUtilization } from "node:perf_hooks";

const CHECK_MS = 1000;
const IDLE = 0.02;

let timer: NodeJS.Timeout | undefined;
let last: EventLoopUtilization | undefined;
let running: Promise<void> | undefined;

/** Settle the heap at the next idle second (one collection however often it is asked before). */
export function settleWhenIdle(): void {
  last = performance.eventLoopUtilization();
  if (timer) return;
  timer = setInterval(check, CHECK_MS);
  timer.unref();
}

function check(): void {
  const now = performance.eventLoopUtilization();
  const busy = performance.eventLoopUtilization(now, last).utilization;
  last = now;
  if (busy > IDLE || running) return;
  clearInterval(timer);
  timer = undefined;
  running = collect().finally(() => (running = undefined));
}

/** V8's memory-reducing full collection; a Node without the inspector skips it. */
export async function collect(): Promise<void> {
  let session: import("node:inspector").Session | undefined;
  try {
    const { Session } = await import("node:inspector");
    session = new Session();
    session.connect();
    const s = session;
    await new Promise<void>((resolve) => s.post("HeapProfiler.collectGarbage", () => resolve()));
  } catch {
    // no inspector in this build of Node: V8's own memory reducer settles the heap later
  } finally {
    session?.disconnect();
  }
}

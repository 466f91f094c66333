// V8's young generation held small while svc loads code and models (issue 43, memory at rest).
// Loading keeps most of what it allocates, scavenge after scavenge, which V8 reads as a reason to
// grow the young generation to its maximum (2 x 16 MB semi-spaces); an idle server then kept
// those pages resident until the memory reducer ran, ~30 MB after the first chat that loads a
// model. bin/svc.mjs starts every command with the growth factor at 1; a server lets it grow
// once started (boot/memory.ts) and holds it at 1 again while a model loads, so under load
// request objects still get a young generation their size (a small one costs scavenges). Each
// release also settles the heap once the server is idle (heap-settle.ts).
import { setFlagsFromString } from "node:v8";
import { settleWhenIdle } from "./heap-settle";

/** V8's default --semi-space-growth-factor */
const DEFAULT_GROWTH = 2;

// start-up is the first hold (bin/svc.mjs set the factor to 1); startupOver() releases it
let holds = 1;
let started = false;

function release(): void {
  if (--holds !== 0) return;
  setFlagsFromString(`--semi-space-growth-factor=${DEFAULT_GROWTH}`);
  settleWhenIdle(); // what the load left behind, once the server is idle (heap-settle.ts)
}

/** Called once, when a server has started: the young generation may grow with the load from now on. */
export function startupOver(): void {
  if (started) return;
  started = true;
  release();
}

/** Run `load` (a model, a large module graph) with the young generation held at its size. */
export async function whileLoading<T>(load: () => Promise<T>): Promise<T> {
  if (holds++ === 0) setFlagsFromString("--semi-space-growth-factor=1");
  try {
    return await load();
  } finally {
    release();
  }
}

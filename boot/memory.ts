// Young-generation sizing around start-up (issue 43, memory at rest). bin/svc.mjs starts every
// command with V8's semi-space growth factor at 1: loading several hundred modules survives
// scavenge after scavenge, which V8 reads as a reason to grow the young generation to its
// maximum (2 x 16 MB semi-spaces), and an idle server then kept those pages resident. Once a
// server has started, the default factor is back, so under load the young generation grows as
// before (request objects die young; a small one would cost CPU per request in scavenges).
import { setFlagsFromString } from "node:v8";

/** V8's default --semi-space-growth-factor */
const DEFAULT_GROWTH = 2;

/** Called once a server is ready: the young generation may grow with the load from now on. */
export function startupOver(): void {
  setFlagsFromString(`--semi-space-growth-factor=${DEFAULT_GROWTH}`);
}

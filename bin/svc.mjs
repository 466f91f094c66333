#!/usr/bin/env -S MALLOC_TRIM_THRESHOLD_=1048576 node --no-concurrent-recompilation
// The package's `svc` bin: start the CLI compiled into dist/ (bin/build.mjs; `npm ci` and
// `npm test` build it). Nothing is compiled at run time.
// --no-concurrent-recompilation (on the first line, so the `svc` command runs with it; `npm start`,
// examples/deploy's image and the benches pass it too: test/startup/node-flags.test.ts holds them
// together): V8 optimizes hot functions on the main thread instead of on its worker threads. Those
// threads' compile zones are malloc'd in glibc arenas of their own that keep freed pages, ~12 MB
// resident in an idle gateway and ~25 MB with a model (issue 43, memory at rest). svc's code warms
// up once; a compile job then runs on the thread that needed it, as on one core it did anyway.
// V8 reads the flag when it starts, so setFlagsFromString below cannot set it.
// MALLOC_TRIM_THRESHOLD_=1048576 (on the same line, for the same start-ups; `npm start` and the
// image keep a value you set): glibc raises its mmap threshold to the size of the largest
// mmap'd block freed so far, and the first one is a ~0.9 MB TurboFan compile zone. From then on
// zones of that size come from the main heap, and the holes they leave stayed resident: the
// main heap was ~17 MB in an idle gateway and ~22 MB with a model, against ~7 and ~9 MB with the
// threshold fixed (setting any of glibc's malloc thresholds turns the raising off). Freed memory
// above 1 MB at the top of the heap goes back to the system. glibc reads it when the process
// starts, so it cannot be set from here either.
import { setFlagsFromString } from "node:v8";

// V8's allocation-site pretenuring can decide, from one major GC that lands while many requests
// are in flight, that per-request objects are long-lived; from then on they are allocated in the
// old generation, and a server under load spends ~4x as long in each young-generation GC and
// serves ~8% fewer requests (seen in about a third of gateway bench runs). A request server's
// objects are short-lived, so the heuristic is turned off before anything is allocated.
setFlagsFromString("--no-allocation-site-pretenuring");

// Prisma's query compiler is a 1.9 MB WebAssembly module. By default V8 compiles every function
// of it up front with its baseline compiler and then recompiles hot ones with its optimizing one,
// which kept ~15 MB of machine code resident in an idle server (issue 43). svc calls a small part
// of it, and only for admin and background work: the gateway's request path reads keys from
// memory and writes through better-sqlite3. So functions are compiled on first call, baseline only.
// Set before anything compiles WebAssembly (the flags are read at compile time).
setFlagsFromString("--wasm-lazy-compilation");
setFlagsFromString("--liftoff-only");
// The young generation stays at its initial size while svc starts (a server lets it grow once
// ready: boot/memory.ts says why).
setFlagsFromString("--semi-space-growth-factor=1");

// stack traces name the .ts lines (dist/ carries source maps)
process.setSourceMapsEnabled(true);

try {
  await import("../dist/cli/main.js");
} catch (e) {
  // only a missing build is explained here; anything else is the CLI's own failure
  if (e?.code !== "ERR_MODULE_NOT_FOUND" || !String(e?.message).includes("/dist/cli/main.js")) throw e;
  process.stderr.write("svc: dist/ is missing: run `npm run build` (or `npm ci`) in the svc folder first\n");
  process.exitCode = 1;
}

#!/usr/bin/env node
// The package's `svc` bin: register tsx (svc runs from its TypeScript sources) and start the CLI.
import { setFlagsFromString } from "node:v8";
import { register } from "tsx/esm/api";

// V8's allocation-site pretenuring can decide, from one major GC that lands while many requests
// are in flight, that per-request objects are long-lived; from then on they are allocated in the
// old generation, and a server under load spends ~4x as long in each young-generation GC and
// serves ~8% fewer requests (seen in about a third of gateway bench runs). A request server's
// objects are short-lived, so the heuristic is turned off before anything is allocated.
setFlagsFromString("--no-allocation-site-pretenuring");

register();
await import("../cli/main.ts");

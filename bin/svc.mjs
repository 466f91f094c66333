#!/usr/bin/env node
// The package's `svc` bin: register tsx (svc runs from its TypeScript sources) and start the CLI.
import { register } from "tsx/esm/api";

register();
await import("../cli/main.ts");

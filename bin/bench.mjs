#!/usr/bin/env node
// `npm run bench`: runs every benchmark section in one process run and writes bench/reports/.
import { register } from "tsx/esm/api";
register();
await import("../bench/run.ts");

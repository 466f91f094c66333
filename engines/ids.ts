// Identifiers for requests and responses: unique, sortable by time, and cheap (a counter and a
// per-process random tail), since one is made per request. Never use these for secrets.
import { randomBytes } from "node:crypto";

const tail = randomBytes(5).toString("hex");
let counter = 0;

let lastMs = 0;
let lastMs36 = "0";

export function uniqueId(prefix: string): string {
  counter = (counter + 1) % 2_176_782_336; // 36^6
  const ms = Date.now();
  if (ms !== lastMs) {
    lastMs = ms; // many ids per millisecond under load: format the time once
    lastMs36 = ms.toString(36);
  }
  return `${prefix}${lastMs36}${counter.toString(36).padStart(6, "0")}${tail}`;
}

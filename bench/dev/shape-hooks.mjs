// Dev tool preload (not a test; `node --import <this file>`): counts, in the process it is loaded
// into, the per-request "shape" that bench/dev/gateway-shape.ts compares between svc and the bare
// gateway: promises and async turns (async_hooks), Map/Set creations, JSON calls and bytes, Buffer
// copies, regex executions, Date/clock calls and crypto calls. SIGUSR2 writes the running totals
// as JSON to $SHAPE_OUT. Patching builtins slows the process: the counts are the point, not speed.
import { createHook } from "node:async_hooks";
import { writeFileSync } from "node:fs";
import http from "node:http";
import crypto from "node:crypto";
import { syncBuiltinESMExports } from "node:module";
import { Session } from "node:inspector";

// SHAPE_ALLOC=1: nothing is patched; SIGUSR2 starts V8's sampling heap profiler (garbage included)
// and the next one stops it and writes bytes sampled by allocating function to $SHAPE_OUT.
if (process.env.SHAPE_ALLOC === "1") {
  const s = new Session();
  s.connect();
  let on = false;
  process.on("SIGUSR2", () => {
    if (!on) {
      on = true;
      s.post("HeapProfiler.startSampling", { samplingInterval: 512, includeObjectsCollectedByMinorGC: true, includeObjectsCollectedByMajorGC: true });
      return;
    }
    s.post("HeapProfiler.stopSampling", (err, r) => {
      const by = {};
      const walk = (n) => {
        const f = n.callFrame;
        const k = `${f.functionName || "(anon)"} ${f.url.replace(/^.*\/(dist|node_modules)\//, "$1/")}:${f.lineNumber + 1}`;
        by[k] = (by[k] ?? 0) + n.selfSize;
        for (const c of n.children) walk(c);
      };
      if (!err) walk(r.profile.head);
      writeFileSync(process.env.SHAPE_OUT, JSON.stringify(by));
    });
  });
}

const c = {};
// SHAPE_STACKS=1 also counts each call by the first frame outside this file and node's internals
const stacks = process.env.SHAPE_STACKS === "1";
const where = () => {
  const lines = new Error().stack.split("\n").slice(2);
  const l = lines.find((x) => !x.includes("shape-hooks") && !x.includes("node:") && !x.includes("(<anonymous>)")) ?? "?";
  return l.trim().replace(/^at /, "").replace(/file:\/\/\S*?\/(dist|node_modules)\//, "$1/");
};
let busy = false;
const bump = (k, n = 1) => {
  c[k] = (c[k] ?? 0) + n;
  if (stacks && !busy && n === 1 && !k.startsWith("async") && k !== "requests") {
    busy = true; // where() itself runs regexes and makes promises-free calls that would recurse
    const w = `  ${k} @ ${where()}`;
    busy = false;
    c[w] = (c[w] ?? 0) + 1;
  }
};

if (process.env.SHAPE_ALLOC !== "1") install();
function install() {
createHook({
  init(_id, type) { if (type === "PROMISE" || !stacks) bump(`init ${type}`); },
  before() { bump("async turns (callbacks run)"); },
}).enable();

/** wrap obj[name] so each call bumps `key` (and `bytes(result, args)` into `key bytes`) */
function count(obj, name, key, bytes) {
  const f = obj[name];
  obj[name] = function (...args) {
    bump(key);
    const r = new.target ? Reflect.construct(f, args, new.target) : f.apply(this, args);
    if (bytes) bump(`${key} bytes`, bytes(r, args) ?? 0);
    return r;
  };
}
const len = (x) => (typeof x === "string" ? x.length : x?.length ?? 0);

count(JSON, "parse", "JSON.parse", (_r, a) => len(a[0]));
count(JSON, "stringify", "JSON.stringify", (r) => len(r));
count(Buffer, "concat", "Buffer.concat", (r) => r.length);
count(Buffer, "from", "Buffer.from", (r) => r.length);
count(Buffer, "alloc", "Buffer.alloc");
count(Buffer, "allocUnsafe", "Buffer.allocUnsafe");
count(Buffer, "byteLength", "Buffer.byteLength");
count(Buffer.prototype, "toString", "Buffer toString", (r) => len(r));
count(RegExp.prototype, "exec", "regex executions");
count(Date, "now", "Date.now");
count(Date.prototype, "toISOString", "toISOString");
count(performance, "now", "performance.now");
count(process.hrtime, "bigint", "process.hrtime.bigint");
const hrBig = process.hrtime.bigint;
count(process, "hrtime", "process.hrtime");
process.hrtime.bigint = hrBig;
for (const f of ["createHash", "createHmac", "randomUUID", "randomBytes", "timingSafeEqual", "randomFillSync"]) count(crypto, f, `crypto.${f}`);
syncBuiltinESMExports();

const RealDate = Date;
globalThis.Date = new Proxy(RealDate, { construct: (t, a, nt) => (bump("new Date"), Reflect.construct(t, a, nt)) });
for (const [name, Real] of [["Map", Map], ["Set", Set]]) {
  globalThis[name] = class extends Real {
    constructor(it) { super(it); bump(`new ${name}`); }
  };
}

const emit = http.Server.prototype.emit;
http.Server.prototype.emit = function (ev, ...a) {
  if (ev === "request") bump("requests");
  return emit.call(this, ev, ...a);
};

process.on("SIGUSR2", () => writeFileSync(process.env.SHAPE_OUT, JSON.stringify(c)));
}

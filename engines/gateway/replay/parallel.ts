// A state's gate on a thread of its own: judging an entry under the current and the proposed
// state are independent (two ReplayWorlds share nothing), so a large replay judges each on a
// worker, page by page in the same order, while its own thread reads the store and merges (the
// read alone is about a third of the work: three threads share two cores evenly). Pages go over
// as typed arrays (columns.ts). Where no worker can start (a test runner that does not load its
// modules from files), the replay judges both states on its own thread.
import { Worker } from "node:worker_threads";
import { existsSync } from "node:fs";
import { createRequire } from "node:module";
import path from "node:path";
import { pathToFileURL } from "node:url";
import type { Outcome } from "./judge";
import type { ReplayObject, AlertCount } from "./world";
import { encodePage, outcomeOf, StringTable, type PageColumns } from "./columns";
import type { FromWorker, ToWorker } from "./judge-worker";

const YOUNG_MB = Number(process.env.SVC_REPLAY_YOUNG_MB ?? 48);

/** A worker on judge-worker beside this module: the built .js (dist/), or from the sources the
 * .ts through tsx (the bench); null when this module is not a file (a test runner's transform). */
function startWorker(workerData: unknown): Worker | null {
  // import.meta.filename, not import.meta.url: the build points the latter back at the source
  const self = (import.meta as { filename?: string }).filename;
  if (!self) return null;
  const ts = self.endsWith(".ts");
  const file = path.join(path.dirname(self), ts ? "judge-worker.ts" : "judge-worker.js");
  if (!existsSync(file)) return null;
  // a young generation larger than V8's default: judging leaves little alive past a page, so
  // fewer, not larger, scavenges (GC was a seventh of the replay's CPU)
  const resourceLimits = { maxYoungGenerationSizeMb: YOUNG_MB };
  if (!ts) return new Worker(file, { workerData, resourceLimits });
  // tsx's ESM entry (its CommonJS one registers from the wrong directory), found through require
  const tsx = createRequire(self).resolve("tsx/esm/api").replace(/\.cjs$/, ".mjs");
  if (!existsSync(tsx)) return null;
  const boot = `import(${JSON.stringify(pathToFileURL(tsx).href)}).then((m) => { m.register(); return import(${JSON.stringify(pathToFileURL(file).href)}); });`;
  return new Worker(boot, { eval: true, workerData, resourceLimits });
}

/** The worker thread failed (crashed, exited, or reported an error): the replay can run again on
 * one thread (index.ts), which needs no worker. */
export class ReplayWorkerError extends Error {}

/** Called with each worker once it starts (tests make one fail mid-replay). */
export const workerHooks: { started?: (w: Worker) => void } = {};

export class WorkerJudge {
  /** the worker's outcomes (refusal, provider and model), by the index its pages answer with */
  readonly outcomes: Outcome[] = [];
  /** answers in the order the pages went */
  private readonly waiting: Array<{ ok(m: FromWorker): void; fail(e: Error): void }> = [];
  private failed: Error | null = null;

  private constructor(private readonly worker: Worker) {
    worker.on("message", (m: FromWorker) => {
      if ("error" in m) return this.fail(new ReplayWorkerError(`replay worker: ${m.error}`));
      this.waiting.shift()?.ok(m);
    });
    worker.on("error", (e) => this.fail(new ReplayWorkerError(`replay worker: ${e?.message ?? e}`)));
    worker.on("exit", (code) => this.fail(new ReplayWorkerError(`replay worker exited (${code})`)));
  }

  /** A worker judging `objects`' state, or null where none can start. */
  static start(objects: readonly ReplayObject[]): WorkerJudge | null {
    const plain = objects.map((o) => ({ kind: o.kind, name: o.name, owner: o.owner, spec: o.spec, createdAt: o.createdAt }));
    const w = startWorker({ objects: plain });
    if (!w) return null;
    const judge = new WorkerJudge(w);
    workerHooks.started?.(w);
    return judge;
  }

  private fail(e: Error): void {
    this.failed ??= e;
    for (const w of this.waiting.splice(0)) w.fail(this.failed);
  }

  private ask(m: ToWorker, transfer: ArrayBuffer[] = []): Promise<FromWorker> {
    if (this.failed) return Promise.reject(this.failed);
    return new Promise((ok, fail) => {
      this.waiting.push({ ok, fail });
      this.worker.postMessage(m, transfer);
    });
  }

  /** A page's judgements under the worker's state: per entry an index into `outcomes` (-1: not
   * judged) and its spend. `move`: the page's arrays are moved to the worker (else copied, for a
   * page sent to two workers). */
  async judge(c: PageColumns, move = true): Promise<{ outcome: Int32Array; usd: Float64Array }> {
    const m = await this.ask({ page: c }, move ? [c.ts.buffer as ArrayBuffer, c.s.buffer as ArrayBuffer, c.tokens.buffer as ArrayBuffer] : []);
    if (!("judged" in m)) throw new ReplayWorkerError("replay worker: unexpected answer");
    for (const x of m.judged.outcomes) this.outcomes.push(outcomeOf(x));
    return m.judged;
  }

  /** The alerts the worker's state counted; the worker ends. */
  async close(): Promise<AlertCount> {
    try {
      const m = await this.ask({ close: true });
      if (!("counted" in m)) throw new ReplayWorkerError("replay worker: unexpected answer");
      const back = (xs: Array<[string, Array<[string, number]>]>) => new Map(xs.map(([k, e]) => [k, new Map(e)]));
      return { alerts: back(m.counted.alerts), webhooks: back(m.counted.webhooks) };
    } finally {
      await this.stop();
    }
  }

  /** Judge an empty page (the worker has loaded its modules), then end the worker. */
  async warm(): Promise<void> {
    try {
      await this.judge(encodePage([], new StringTable()));
    } finally {
      await this.stop();
    }
  }

  async stop(): Promise<void> {
    this.worker.removeAllListeners("exit");
    await this.worker.terminate();
  }
}

// What-if replay (docs/replay.md): the audit entries of a window, in the store's order, judged by
// the gate of the current state and by the gate of a proposed one (a plan laid over the store),
// each with a simulated clock at the entry's time. Reads nothing but the entries (no prompt),
// writes nothing: the report is the only output.
import { REPLAY_PAGE } from "../../../prisma/repos/audit-replay";
import { auditEntries, oldestEntry, type ReplayEntry, type ReplaySource } from "./entries";
import { judgePage, type Judged } from "./judge";
import { ReplayWorkerError, WorkerJudge } from "./parallel";
import { encodePage, StringTable } from "./columns";
import { ReportBuilder, differences, dollars, type KeyReport, type Rollup, type Totals } from "./report";
import { ReplayWorld, type ReplayObject } from "./world";
import type { ReplayWindow } from "./window";

export { replayWindow, parseDuration, type ReplayWindow } from "./window";
export { dollars, type KeyReport, type Rollup, type Totals } from "./report";
export type { ReplayObject } from "./world";
export type { ReplayEntry, ReplaySource } from "./entries";

export interface ReplayReport {
  window: {
    from: string;
    to: string;
    /** the oldest entry the store holds, when retention pruned the start of the window */
    availableFrom?: string;
    /** share of the window the store still holds (1: all of it) */
    coverage: number;
  };
  /** audit entries in the window made with a key */
  entries: number;
  /** the model calls replayed (chat, completions, responses, messages, Ollama, embeddings) */
  replayed: number;
  /** entries of other calls (tools, media, memory, ...), by audit name: not judged */
  notReplayed: Record<string, number>;
  keys: KeyReport[];
  teams: Rollup[];
  organizations: Rollup[];
  totals: Totals;
  /** 0: the plan changes nothing in the window's traffic */
  differences: number;
  /** set when the worker thread failed and the window was replayed again on one thread: why */
  workerFailed?: string;
  summary: string;
}

/** A planned change as replay needs it (manifests' PlannedChange). */
export interface ChangeLike {
  action: "create" | "update" | "delete" | "unchanged";
  kind: string;
  name: string;
  owner: string;
  spec?: unknown;
}

/** The store's objects with a plan's changes laid over them: the state apply would write. */
export function proposedObjects(current: readonly ReplayObject[], changes: readonly ChangeLike[]): ReplayObject[] {
  const byId = new Map(current.map((o) => [`${o.kind}/${o.name}`, o]));
  for (const c of changes) {
    const id = `${c.kind}/${c.name}`;
    if (c.action === "delete") byId.delete(id);
    else if (c.action === "create" || c.action === "update") {
      const old = byId.get(id);
      byId.set(id, { kind: c.kind, name: c.name, owner: c.owner, spec: c.spec, createdAt: old?.createdAt ?? new Date(0).toISOString() });
    }
  }
  return [...byId.values()];
}

/** `f` with no stack captured for Errors: a refusal is an Error the replay reads only the code
 * of (judging is synchronous, so nothing else runs while the limit is off). */
function noStacks<T>(f: () => T): T {
  const limit = Error.stackTraceLimit;
  Error.stackTraceLimit = 0;
  try {
    return f();
  } finally {
    Error.stackTraceLimit = limit;
  }
}

/** Replay entries (pages, oldest first) through both states. `worker`: judge each state on a
 * worker thread of its own (parallel.ts), this thread only reading and merging, "always",
 * "never", or ("auto") when the first page is full (a large window: workers cost their start-up,
 * worth it from some ten thousand entries); judged here where none can start. */
export async function replayPages(pages: PageSource, current: readonly ReplayObject[], proposed: readonly ReplayObject[], o: { worker?: "auto" | "always" | "never" } = {}): Promise<Omit<ReplayReport, "window" | "summary">> {
  try {
    return await replayOnce(typeof pages === "function" ? pages() : pages, current, proposed, o);
  } catch (e) {
    // a failed worker costs the speed, not the report: the window is read and judged again here
    // (a worker's state cannot be rebuilt half way), when the pages can be read again
    const again = typeof pages === "function" ? pages() : Array.isArray(pages) ? pages : null;
    if (!(e instanceof ReplayWorkerError) || !again) throw e;
    const r = await replayOnce(again, current, proposed, { worker: "never" });
    return { ...r, workerFailed: e.message };
  }
}

/** Pages of entries, oldest first: a function opens a fresh pass (a window can be read again),
 * as an array can be; a one-pass iterable cannot be replayed again if the worker fails. */
export type PageSource = (() => AsyncIterable<ReplayEntry[]>) | AsyncIterable<ReplayEntry[]> | Iterable<ReplayEntry[]>;

/** Pages sent to the workers ahead of the one being merged: this thread reads on meanwhile. */
const AHEAD = 2;

type Answer = Promise<{ outcome: Int32Array; usd: Float64Array }>;

async function replayOnce(pages: AsyncIterable<ReplayEntry[]> | Iterable<ReplayEntry[]>, current: readonly ReplayObject[], proposed: readonly ReplayObject[], o: { worker?: "auto" | "always" | "never" }): Promise<Omit<ReplayReport, "window" | "summary">> {
  // here for the keys' names (and to judge, without workers)
  const cur = new ReplayWorld(current);
  const next = new ReplayWorld(proposed);
  let workers: [WorkerJudge, WorkerJudge] | null = null;
  let first = true;
  const b = new ReportBuilder();
  const notReplayed: Record<string, number> = {};
  let entries = 0;
  let replayed = 0;
  const judgeAll = (w: ReplayWorld, page: readonly ReplayEntry[]) => noStacks(() => judgePage(w, page));
  const skip = (e: ReplayEntry) => {
    notReplayed[e.action] = (notReplayed[e.action] ?? 0) + 1;
  };
  const merge = (page: readonly ReplayEntry[], cs: ReadonlyArray<Judged | null>, ns: ReadonlyArray<Judged | null>) => {
    entries += page.length;
    for (let i = 0; i < page.length; i++) {
      const c = cs[i];
      const n = ns[i];
      if (!c || !n) skip(page[i]);
      else b.add(page[i], c, c.usdMicros, n, n.usdMicros), replayed++;
    }
  };
  // the workers' answers merged straight from their columns: no object per judgement
  const mergeColumns = async (page: readonly ReplayEntry[], cp: Answer, np: Answer, [cw, nw]: [WorkerJudge, WorkerJudge]) => {
    const c = await cp;
    const n = await np;
    entries += page.length;
    for (let i = 0; i < page.length; i++) {
      const ci = c.outcome[i];
      const ni = n.outcome[i];
      if (ci < 0 || ni < 0) skip(page[i]);
      else b.add(page[i], cw.outcomes[ci], c.usd[i], nw.outcomes[ni], n.usd[i]), replayed++;
    }
  };
  const strings = new StringTable();
  const ahead: Array<{ page: ReplayEntry[]; c: Answer; n: Answer }> = [];
  try {
    for await (const page of pages) {
      if (first) {
        first = false;
        const mode = o.worker ?? "auto";
        if (mode === "always" || (mode === "auto" && page.length >= REPLAY_PAGE)) workers = startPair(current, proposed);
      }
      if (!workers) {
        merge(page, judgeAll(cur, page), judgeAll(next, page));
        continue;
      }
      // one encoding for both workers (they intern the same strings in the same order)
      const cols = encodePage(page, strings);
      const c = workers[0].judge(cols, false);
      const n = workers[1].judge(cols, true);
      c.catch(() => undefined); // awaited in order, below
      n.catch(() => undefined);
      ahead.push({ page, c, n });
      if (ahead.length > AHEAD) {
        const h = ahead.shift()!;
        await mergeColumns(h.page, h.c, h.n, workers);
      }
    }
    if (workers) for (const h of ahead.splice(0)) await mergeColumns(h.page, h.c, h.n, workers);
    await cur.close();
    await next.close();
    if (workers) {
      cur.counted = await workers[0].close();
      next.counted = await workers[1].close();
    }
  } finally {
    if (workers) await Promise.all(workers.map((w) => w.stop()));
  }
  b.alerts("alerts", cur.counted.alerts, next.counted.alerts);
  b.alerts("webhooks", cur.counted.webhooks, next.counted.webhooks);
  const describe = (id: string) => {
    const k = next.keys.get(id) ?? cur.keys.get(id);
    return k ? { name: k.name, team: k.spec.team_id, organization: k.spec.organization_id } : {};
  };
  const r = b.build(describe);
  return { entries, replayed, notReplayed, ...r, differences: differences(r.totals) };
}

/** A worker for each state, or null where either cannot start. */
function startPair(current: readonly ReplayObject[], proposed: readonly ReplayObject[]): [WorkerJudge, WorkerJudge] | null {
  const c = WorkerJudge.start(current);
  const n = c && WorkerJudge.start(proposed);
  if (c && n) return [c, n];
  void c?.stop();
  return null;
}

/** Replay the window of the store's audit log through the current and the proposed state. */
export async function replay(db: ReplaySource, current: readonly ReplayObject[], proposed: readonly ReplayObject[], w: ReplayWindow): Promise<ReplayReport> {
  const oldest = await oldestEntry(db);
  const r = await replayPages(() => auditEntries(db, w.from, w.to), current, proposed);
  const start = oldest === null ? w.to : Math.max(w.from, oldest);
  const coverage = Math.max(0, Math.min(1, (w.to - start) / (w.to - w.from)));
  const window: ReplayReport["window"] = { from: new Date(w.from).toISOString(), to: new Date(w.to).toISOString(), coverage: Math.round(coverage * 1e4) / 1e4 };
  if (oldest !== null && start > w.from) window.availableFrom = new Date(start).toISOString();
  const report = { window, ...r, summary: "" };
  report.summary = summaryLine(report);
  return report;
}

const n = (x: number) => x.toLocaleString("en-US");

/** One line, the way Terraform ends a plan. */
export function summaryLine(r: Omit<ReplayReport, "summary">): string {
  const t = r.totals;
  const parts = [`${n(t.newRefusals)} newly refused`, `${n(t.newlyAdmitted)} newly allowed`, `${n(t.rerouted)} rerouted`];
  const s = t.spend;
  const delta = s.proposedMicros - s.currentMicros;
  parts.push(`spend ${dollars(s.currentMicros)} -> ${dollars(s.proposedMicros)} (${delta >= 0 ? "+" : ""}${dollars(delta)})`);
  const da = t.alertsProposed - t.alertsCurrent;
  if (da !== 0) parts.push(`${da > 0 ? "+" : ""}${n(da)} alerts`);
  const dw = t.webhooksProposed - t.webhooksCurrent;
  if (dw !== 0) parts.push(`${dw > 0 ? "+" : ""}${n(dw)} webhooks`);
  const head = `Replay: ${n(r.replayed)} requests`;
  const avail = r.window.coverage === 0 && !r.window.availableFrom ? " (the store holds no audit entries)" : r.window.availableFrom ? ` (only ${Math.round(r.window.coverage * 100)}% of the window is held: entries from ${r.window.availableFrom})` : "";
  return r.differences === 0 ? `${head}, no differences.${avail}` : `${head}: ${parts.join(", ")}.${avail}`;
}

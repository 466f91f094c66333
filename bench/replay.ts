// What-if replay benchmark (docs/replay.md): 1,000,000 audit entries of one day (50 keys in 5
// organizations, 3 models on 2 providers, some refusals and upstream errors) written to the store,
// then replayed through a current and a proposed state (5 keys' per_minute lowered, one price
// raised, a Deny on a provider for one key), on SQLite and on PostgreSQL. Timed: the whole replay
// (streaming read in keyset pages + both states' gates), and the read alone. Target: under 10 s.
import { mkdtempSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { performance } from "node:perf_hooks";
import { openStore, type StoreDb } from "../engines/store/open";
import { auditRow } from "../engines/gateway/audit/rows";
import { replay, type ReplayObject } from "../engines/gateway/replay";
import { auditEntries } from "../engines/gateway/replay/entries";
import { WorkerJudge } from "../engines/gateway/replay/parallel";
import { hashSecret } from "../engines/gateway/keys";
import type { AuditRow } from "../prisma/repos/types";
import { missingServices, startPostgres, type Service } from "../test/helpers/services";
import { table, type Section } from "./report";

const ROWS = Number(process.env.BENCH_REPLAY_ROWS ?? 1_000_000);
const KEYS = 50;
const DAY = 86_400_000;
const MODELS = ["gpt-a", "gpt-b", "claude-c"];
const STATUSES = ["success", "success", "success", "success", "success", "success", "success", "success", "success", "upstream_error"];

export function stateFor(proposed: boolean): ReplayObject[] {
  const at = new Date(0).toISOString();
  const objs: ReplayObject[] = [
    { kind: "Provider", name: "p1", owner: "config:bench", createdAt: at, spec: { type: "openai", baseUrl: "http://127.0.0.1:9", models: [{ name: "gpt-a", inputPerMillion: proposed ? 3 : 2, outputPerMillion: 8 }, { name: "gpt-b", inputPerMillion: 1, outputPerMillion: 2 }] } },
    { kind: "Provider", name: "p2", owner: "config:bench", createdAt: at, spec: { type: "anthropic", baseUrl: "http://127.0.0.1:9", models: [{ name: "claude-c", inputPerMillion: 3, outputPerMillion: 15 }] } },
  ];
  for (let k = 0; k < KEYS; k++) {
    const spec: Record<string, unknown> = { name: `bench ${k}`, secretHash: `sha256:${hashSecret(`bench-${k}`)}`, organization_id: `org-${k % 5}`, rate_limits: { per_minute: proposed && k < 5 ? 10 : 600 }, budget_limits: { daily: 1000 } };
    if (proposed && k === 7) spec.policy = { version: "2024-01-01", statements: [{ effect: "Deny", actions: ["*"], resources: ["provider:p2"] }, { effect: "Allow", actions: ["*"], resources: ["*"] }] };
    objs.push({ kind: "ApiKey", name: `key_bench${String(k).padStart(11, "0")}`, owner: "config:bench", createdAt: at, spec });
  }
  return objs;
}

export async function fill(db: StoreDb, day: number): Promise<number> {
  const t0 = performance.now();
  const step = DAY / ROWS;
  for (let i = 0; i < ROWS; i += 5000) {
    const batch: AuditRow[] = [];
    for (let j = i; j < Math.min(ROWS, i + 5000); j++) {
      const ts = new Date(day + Math.floor(j * step));
      const key = j % KEYS;
      const status = STATUSES[j % STATUSES.length];
      const ok = status === "success";
      batch.push(auditRow({ timestamp: ts, apiKeyId: `key_bench${String(key).padStart(11, "0")}`, apiKeyName: `bench ${key}`, organizationId: `org-${key % 5}`, requestId: `req-${j}`, action: j % 7 === 0 ? "chat.stream" : "chat.completions", model: MODELS[j % 3], provider: j % 3 === 2 ? "p2" : "p1", status, latencyMs: 100, promptTokens: ok ? 200 : 0, completionTokens: ok ? 50 : 0, costMicros: 0n, metadata: {} }, `aud_${String(j).padStart(12, "0")}`, ts));
    }
    const sync = db.repos.audit.sync;
    if (sync) sync.insert(batch);
    else await db.repos.audit.insert(batch);
  }
  return performance.now() - t0;
}

interface Result {
  store: string;
  fillS: number;
  readS: number;
  replayS: number;
  /** CPU time of this process during the replay (user + system): robust to other load */
  cpuS: number;
  entries: number;
  refused: number;
  summary: string;
}

async function onStore(store: string, env: NodeJS.ProcessEnv): Promise<Result> {
  const home = mkdtempSync(path.join(os.tmpdir(), "svc-bench-replay-"));
  const db = await openStore(home, { env, backgroundCheckpoints: false });
  try {
    const day = Math.floor(Date.now() / DAY) * DAY - DAY;
    const fillMs = await fill(db, day);
    let t0 = performance.now();
    let n = 0;
    for await (const page of auditEntries(db, day, day + DAY)) n += page.length;
    const readMs = performance.now() - t0;
    t0 = performance.now();
    const cpu0 = process.cpuUsage();
    const r = await replay(db, stateFor(false), stateFor(true), { from: day, to: day + DAY });
    const cpu = process.cpuUsage(cpu0);
    const replayMs = performance.now() - t0;
    if (n !== ROWS || r.entries !== ROWS) throw new Error(`read ${n} / replayed ${r.entries} of ${ROWS} entries`);
    return { store, fillS: fillMs / 1000, readS: readMs / 1000, replayS: replayMs / 1000, cpuS: (cpu.user + cpu.system) / 1e6, entries: r.entries, refused: r.totals.newRefusals, summary: r.summary };
  } finally {
    await db.close();
    rmSync(home, { recursive: true, force: true });
  }
}

export async function replayBench(): Promise<Section> {
  // the worker thread loads the gate from the sources through tsx here (the server loads built
  // files): one worker started and stopped first, so that compile is not timed in the first store
  await (await WorkerJudge.start(stateFor(true)))?.warm();
  const results: Result[] = [await onStore("SQLite", { ...process.env, SVC_DATABASE_URL: "" })];
  let skipped: string | null = null;
  const services: Service[] = [];
  try {
    try {
      skipped = missingServices();
    } catch (e) {
      skipped = String((e as Error).message);
    }
    if (!skipped) {
      const pg = await startPostgres();
      services.push(pg);
      results.push(await onStore("PostgreSQL", { ...process.env, SVC_DATABASE_URL: pg.url }));
    }
  } finally {
    for (const s of services) await s.stop().catch(() => undefined);
  }
  const f = (x: number) => x.toFixed(2);
  const body = [
    `${ROWS.toLocaleString("en-US")} audit entries of one day (${KEYS} keys in 5 organizations, 3 models on 2 providers, 10% upstream errors) replayed through the current and a proposed state (5 keys' per_minute 600 -> 10, a price raised, a Deny on a provider for one key): one streaming pass in pages of 10,000 (SQLite: a raw statement iterator on a read-only connection; PostgreSQL: a server-side cursor, the next page fetched while one is judged), each entry judged by both states' gates. Target: under 10 s. "read" is the pass over the entries alone; "replay CPU s" is this process's CPU time during the replay (the figure to trust on a loaded machine; PostgreSQL's own CPU is not in it).`,
    "",
    table(["store", "fill s", "read s", "replay s", "replay CPU s", "entries/s", "newly refused", "under 10 s"], results.map((r) => [r.store, f(r.fillS), f(r.readS), f(r.replayS), f(r.cpuS), Math.round(r.entries / r.replayS).toLocaleString("en-US"), r.refused.toLocaleString("en-US"), r.replayS < 10 ? "yes" : "no"])),
    "",
    ...results.map((r) => `${r.store}: ${r.summary}`),
    ...(skipped ? ["", `PostgreSQL skipped: ${skipped}.`] : []),
  ].join("\n");
  return { title: "What-if replay (config plan --replay)", body, data: { rows: ROWS, results, skipped } };
}

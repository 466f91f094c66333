// `svc status`: where svc listens and every object with its Ready condition.
import type { Command } from "commander";
import { admin, connect, errorOf, storeExists } from "./connect";
import { addTargetOptions } from "./config";
import { withOfflineStore } from "./offline";
import { CliError } from "./errors";
import { request } from "./http";
import { resolveHome, storeFile } from "../engines/paths";
import { objectSummary } from "../manifests/object-summary";

export interface ObjectRow {
  kind: string;
  name: string;
  owner: string;
  generation: number;
  observedGeneration: number | null;
  deleting: boolean;
  ready: { status: string; reason: string; message: string; lastTransitionTime?: string } | null;
  spec?: { file?: string };
}

export interface StatusSnapshot {
  online: boolean;
  url: string | null;
  pid?: number;
  home: string;
  modelsDir?: string;
  revision: number;
  /** what a starting server is still loading (empty once it is ready) */
  loading?: string[];
  server?: any;
  objects: ObjectRow[];
}

/** Status from the running server, or from the store file when none answers (null: no store). */
export async function snapshot(opts: { port?: string; home?: string }): Promise<{ snap: StatusSnapshot | null; note: string; base: string }> {
  const { target, online, note } = await connect(opts);
  if (online) {
    const r = await admin(target.base, "GET", "/admin/config/status");
    if (r.status !== 200) throw new CliError(errorOf(r));
    return { snap: { online: true, ...r.json, url: r.json.url ?? target.base }, note, base: target.base };
  }
  if (!(await storeExists(target.home))) return { snap: null, note, base: target.base };
  const snap = await withOfflineStore(target.home, async (store) => ({
    online: false,
    url: null,
    home: target.home,
    revision: store.revision,
    server: store.list({ kind: "Server" })[0]?.spec,
    objects: store.list({ includeDeleting: true }).map(objectSummary),
  }));
  return { snap, note, base: target.base };
}

function table(rows: string[][]): string {
  const widths = rows[0].map((_, i) => Math.min(48, Math.max(...rows.map((r) => r[i].length))));
  return rows.map((r) => r.map((c, i) => (i === r.length - 1 ? c : c.padEnd(widths[i]))).join("  ").trimEnd()).join("\n");
}

/** The router's deployments as /metrics shows them (svc_router_deployment_*), as table rows. */
async function deploymentRows(base: string): Promise<string[][]> {
  let text = "";
  try {
    const r = await request(`${base}/metrics`); // node:http: fetch would load undici for this one call
    if (r.status === 200) text = r.text;
  } catch {
    return [];
  }
  const by = new Map<string, Record<string, string>>();
  for (const line of text.split("\n")) {
    const m = /^svc_router_deployment_(\w+)\{([^}]*)\} (\S+)$/.exec(line);
    if (!m) continue;
    const labels = Object.fromEntries([...m[2].matchAll(/(\w+)="((?:[^"\\]|\\.)*)"/g)].map((x) => [x[1], x[2]]));
    const id = `${labels.model}\0${labels.provider}`;
    const row = by.get(id) ?? { model: labels.model, provider: labels.provider };
    row[m[1]] = m[3];
    if (labels.strategy) row.strategy = labels.strategy;
    by.set(id, row);
  }
  const rows = [["MODEL", "PROVIDER", "STRATEGY", "WEIGHT", "IN-FLIGHT", "REQUESTS", "FAILURES", "LATENCY", "STATE"]];
  for (const d of [...by.values()].sort((a, b) => (a.model + a.provider).localeCompare(b.model + b.provider))) {
    const cool = Number(d.cooldown_seconds ?? 0);
    const lat = d.latency_seconds === undefined ? "-" : `${Math.round(Number(d.latency_seconds) * 1000)}ms`;
    rows.push([d.model, d.provider, d.strategy ?? "", d.weight ?? "", d.in_flight ?? "0", d.requests_total ?? "0", d.failures_total ?? "0", lat, cool > 0 ? `cooling down ${Math.ceil(cool)}s` : "in service"]);
  }
  return rows;
}

export function registerStatus(program: Command): void {
  addTargetOptions(program.command("status").description("show the server address and every object's Ready condition"))
    .option("--json", "print JSON")
    .action(async (o) => {
      const { snap, note, base } = await snapshot(o);
      if (o.json) {
        process.stdout.write(JSON.stringify(snap ?? { online: false, url: null, objects: [] }, null, 2) + "\n");
        return;
      }
      if (!snap) {
        process.stdout.write(`svc is not running (no answer at ${base}) and has no store yet at ${storeFile(resolveHome(o.home))}.\nStart it with: svc serve\n`);
        return;
      }
      const out: string[] = [];
      if (snap.online) out.push(`svc is running at ${snap.url} (pid ${snap.pid}); store revision ${snap.revision}; data dir ${snap.home}`);
      else out.push(`svc is not running (${note}).`, `Stored state, store revision ${snap.revision}; conditions are as last written:`);
      if (snap.online && snap.loading?.length) out.push(`still starting: loading ${snap.loading.join(", ")}`);
      const objs = [...snap.objects].sort((a, b) => (a.kind + "/" + a.name).localeCompare(b.kind + "/" + b.name));
      if (objs.length === 0) out.push("No objects. Apply manifests with: svc config apply FILE");
      else {
        const rows = [["OBJECT", "READY", "REASON", "GENERATION", "MESSAGE"]];
        for (const x of objs) {
          const gen = `${x.observedGeneration ?? "-"}/${x.generation}`;
          rows.push([`${x.kind}/${x.name}`, x.deleting ? "Deleting" : x.ready?.status ?? "Unknown", x.ready?.reason ?? "Pending", gen, x.ready?.message ?? "not reconciled yet"]);
        }
        out.push(table(rows));
      }
      if (snap.online && !snap.loading?.length) {
        // (a starting svc serves /metrics once it is loaded: no waiting for it here)
        const rows = await deploymentRows(base);
        if (rows.length > 1) out.push("", "Load-balanced deployments:", table(rows));
      }
      process.stdout.write(out.join("\n") + "\n");
    });
}

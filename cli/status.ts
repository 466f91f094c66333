// `svc status`: where svc listens and every object with its Ready condition. Conditions are what
// the controllers last wrote; two are corrected here to say what is true now: a Server when svc
// is not running, and a Model's loaded state (the pool loads and unloads without a reconcile).
import type { Command } from "commander";
import { outputFormat, printData, table, withOutputOption } from "./print";
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
  /** an ApiKey's descriptive name, when its object name is an id */
  label?: string;
  /** a Model loaded in the pool now (running server only) */
  loaded?: boolean;
  controller?: string;
  owner: string;
  generation: number;
  observedGeneration: number | null;
  deleting: boolean;
  ready: { status: string; reason: string; message: string; lastTransitionTime?: string } | null;
  spec?: { file?: string; source?: string };
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
    const snap: StatusSnapshot = { online: true, ...r.json, url: r.json.url ?? target.base };
    snap.objects = snap.objects.map(liveModel);
    return { snap, note, base: target.base };
  }
  if (!(await storeExists(target.home))) return { snap: null, note, base: target.base };
  const snap = await withOfflineStore(target.home, async (store) => ({
    online: false,
    url: null,
    home: target.home,
    revision: store.revision,
    server: store.list({ kind: "Server" })[0]?.spec,
    objects: store.list({ includeDeleting: true }).map(objectSummary).map(stoppedServer),
  }));
  return { snap, note, base: target.base };
}

/** With svc stopped, its Server is not Listening, whatever was last written. */
function stoppedServer(o: ObjectRow): ObjectRow {
  if (o.kind !== "Server" || o.deleting) return o;
  const last = o.ready ? ` (last recorded: ${o.ready.reason}${o.ready.message ? `, ${o.ready.message}` : ""})` : "";
  return { ...o, ready: { status: "False", reason: "NotRunning", message: `svc is not running${last}; start it with: svc serve` } };
}

/** A Model's condition says whether it was loaded when last reconciled; the pool knows now. */
function liveModel(o: ObjectRow): ObjectRow {
  if (o.kind !== "Model" || typeof o.loaded !== "boolean" || o.ready?.reason !== "Registered") return o;
  return { ...o, ready: { ...o.ready, message: o.loaded ? "registered; loaded" : "registered; loads on first use" } };
}

/** "ApiKey/key_3f9a (ci-bot)": the id and, beside it, the name a person gave it. */
export function objectName(o: { kind: string; name: string; label?: string }): string {
  return `${o.kind}/${o.name}${o.label ? ` (${o.label})` : ""}`;
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
  withOutputOption(addTargetOptions(program.command("status").description("show the server address and every object's Ready condition")))
    .action(async (o) => {
      const format = outputFormat(o);
      const { snap, note, base } = await snapshot(o);
      if (await printData(format, snap ?? { online: false, url: null, objects: [] })) return;
      const wide = format === "wide";
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
        const rows = [["OBJECT", "READY", "REASON", "GENERATION", ...(wide ? ["OWNER", "CONTROLLER", "SINCE"] : []), "MESSAGE"]];
        for (const x of objs) {
          const gen = `${x.observedGeneration ?? "-"}/${x.generation}`;
          const more = wide ? [x.owner, x.controller ?? "-", x.ready?.lastTransitionTime ?? "-"] : [];
          rows.push([objectName(x), x.deleting ? "Deleting" : x.ready?.status ?? "Unknown", x.ready?.reason ?? "Pending", gen, ...more, x.ready?.message ?? "not reconciled yet"]);
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

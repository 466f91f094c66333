// `svc doctor`: is the server reachable (or is its port taken by something else), is the data dir
// writable, is the store migrated, which GGUFs are in the models dir, and for each object that
// is not Ready: its condition and a hint. Exit 1 when a check fails.
import net from "node:net";
import path from "node:path";
import { existsSync } from "node:fs";
import { access, open, readdir, rm, stat, writeFile, constants } from "node:fs/promises";
import type { Command } from "commander";
import { addTargetOptions } from "./config";
import { probe, resolveTarget } from "./connect";
import { snapshot, type ObjectRow } from "./status";
import { EXIT } from "./errors";
import { offlinePgUrl, safeUrl } from "./offline";
import { resolveModelsDir, storeFile } from "../engines/paths";

type Level = "ok" | "warn" | "FAIL" | "info";
interface Finding {
  level: Level;
  what: string;
  hint?: string;
}

function portInUse(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const s = net.createServer();
    s.once("error", (e: any) => resolve(e?.code === "EADDRINUSE"));
    s.listen(port, "127.0.0.1", () => s.close(() => resolve(false)));
  });
}

async function isGguf(file: string): Promise<boolean> {
  const fh = await open(file, "r").catch(() => null);
  if (!fh) return false;
  try {
    const b = Buffer.alloc(4);
    await fh.read(b, 0, 4, 0);
    return b.toString("latin1") === "GGUF";
  } finally {
    await fh.close();
  }
}

const HINTS: Record<string, string> = {
  BindFailed: "another program holds that address; choose another port (--port, SVC_PORT or Server spec.port) or stop it",
  Duplicate: "Server is a singleton: delete the extra Server objects",
  ReconcileError: "the controller failed and retries with backoff; the server log (stderr of `svc serve`) has the details",
  FinalizeFailed: "cleanup before deletion failed and is retried; the server log has the details",
  NotImplemented: "this build stores the object but has no engine for its kind yet; nothing to fix",
  NotRunning: "start it with: svc serve   (or npm start --silent)",
  FileNotFound: "write the GGUF file there (`svc models create-tiny` for the default), or point spec.file at one and apply again",
  InvalidGguf: "point spec.file at a .gguf model file (re-download or regenerate it) and apply again",
  NoDeployment: "apply the Provider each deployment names, listing the model, or change spec.router.deployments",
  DeploymentMissing: "apply the missing Provider (or add the model to its spec.models), or drop that deployment",
  PolicyNotFound: "apply the AccessPolicy the key names, or remove it from spec.policies",
  InvalidSecretHash: "set spec.secretHash to the sha256:<64 hex> that `svc keys generate` prints",
  LocalInferenceUnavailable: "start svc with local inference (the model pool), or route this Provider's models elsewhere",
  ModelNotSet: "set spec.model (a Model or a Provider's model name) and apply again",
  ModelNotFound: "apply a Model (or a Provider model) with that name, or fix spec.model",
  ModelNotReady: "fix the Model it uses first (see its line)",
  ToolNotFound: "fix spec.tools: name only tools this svc offers (an McpServer's or a built-in one)",
  InvalidTimeZone: "use an IANA time zone name such as Europe/Berlin",
};

/** The fix for a condition, from its reason; a missing variable or file is named. */
function hintFor(o: ObjectRow): string {
  const reason = o.ready?.reason;
  const message = o.ready?.message ?? "";
  if (reason === "CredentialMissing" || reason === "WebhookSecretMissing") {
    const env = /environment variable ([A-Za-z_][A-Za-z0-9_]*)/.exec(message)?.[1];
    if (env) return `set ${env} in svc's environment and restart svc (it reads its environment at start)`;
    const file = /file (\S+) is missing/.exec(message)?.[1];
    if (file) return `write the secret to ${file} (svc checks again within 30 s)`;
  }
  if (reason && HINTS[reason]) return HINTS[reason];
  if (!o.ready || (o.observedGeneration ?? 0) < o.generation) return "not reconciled at its current generation yet; is the server running? (`svc serve`)";
  return `change what the message names in the manifest of ${o.kind}/${o.name} and apply it again (svc config apply FILE); the server log has the details`;
}

async function checkModelFile(o: ObjectRow, modelsDir: string): Promise<Finding | null> {
  const file = o.spec?.file;
  // a Model with source downloads its file: its Ready condition says how far (Downloading)
  if (!file || o.spec?.source) return null;
  const abs = path.isAbsolute(file) ? file : path.join(modelsDir, file);
  if (!existsSync(abs)) {
    return {
      level: "FAIL",
      what: `Model/${o.name}: file ${abs} not found`,
      hint: `put the GGUF file there, or fix spec.file (relative paths resolve in the models dir ${modelsDir})`,
    };
  }
  if (!(await isGguf(abs))) {
    return { level: "FAIL", what: `Model/${o.name}: ${abs} is not a GGUF file (bad magic)`, hint: "spec.file must name a .gguf model file; re-download or regenerate it" };
  }
  return null;
}

/** "store …: 12.3 MB, 4,567 audit entries, the oldest from 2026-08-27 (90 days ago)" */
function storeSize(where: string, bytes: number, rows: number, oldest: Date | null): string {
  const mb = `${(bytes / 1e6).toFixed(1)} MB`;
  if (!oldest) return `${where}: ${mb}, no audit entries`;
  const days = Math.floor((Date.now() - oldest.getTime()) / 86_400_000);
  return `${where}: ${mb}, ${rows.toLocaleString("en-US")} audit entries, the oldest from ${oldest.toISOString().slice(0, 10)} (${days} ${days === 1 ? "day" : "days"} ago; Server spec.retentionDays keeps 90 by default)`;
}

/** The SQLite store's size (file and WAL) and its oldest audit entry, read-only. */
async function sqliteSize(file: string): Promise<string> {
  const Database = (await import("better-sqlite3")).default;
  const db = new Database(file, { readonly: true, fileMustExist: true });
  try {
    const r = db.prepare(`SELECT MIN(timestamp) AS t, COUNT(*) AS n FROM "AuditEntry"`).get() as { t: string | null; n: number };
    const bytes = (await stat(file)).size + ((await stat(file + "-wal").catch(() => null))?.size ?? 0);
    return storeSize(`store ${file}`, bytes, r.n, r.t ? new Date(r.t) : null);
  } finally {
    db.close();
  }
}

/** SVC_DATABASE_URL's PostgreSQL: does it answer, are its migrations applied? */
async function checkPgStore(url: string, add: (level: Level, what: string, hint?: string) => void): Promise<void> {
  const pg = (await import("pg")).default;
  const { listPgMigrations } = await import("../engines/store/pg-migrate");
  const c = new pg.Client({ connectionString: url, connectionTimeoutMillis: 10_000 });
  const where = `PostgreSQL store ${safeUrl(url)}`;
  try {
    await c.connect();
    const t = await c.query(`SELECT to_regclass('"_prisma_migrations"') AS t`);
    const done = new Set<string>(t.rows[0]?.t ? (await c.query(`SELECT migration_name FROM "_prisma_migrations" WHERE finished_at IS NOT NULL`)).rows.map((r) => r.migration_name) : []);
    const pending = listPgMigrations().filter((m) => !done.has(m));
    if (pending.length === 0) add("ok", `${where} answers and is migrated (${done.size} migrations applied)`);
    else add("warn", `${where} answers; ${pending.length} pending migrations (${pending.join(", ")})`, "they are applied automatically at the next start of svc serve");
    const size = Number((await c.query(`SELECT pg_database_size(current_database()) AS b`)).rows[0].b);
    const has = (await c.query(`SELECT to_regclass('auditentry') AS t`)).rows[0]?.t;
    // the column holds UTC wall time: read it as text with its zone said
    const a = has ? (await c.query(`SELECT to_char(MIN("timestamp"), 'YYYY-MM-DD"T"HH24:MI:SS"Z"') AS t, COUNT(*)::int AS n FROM auditentry`)).rows[0] : { t: null, n: 0 };
    add("info", storeSize(where, size, a.n, a.t ? new Date(a.t) : null));
  } catch (e: any) {
    add("FAIL", `${where} (SVC_DATABASE_URL) cannot be reached: ${String(e?.message || e?.code || e).split("\n")[0]}`, "is PostgreSQL running, and are the host, port, user and password right?");
  } finally {
    await c.end().catch(() => undefined);
  }
}

export async function runDoctor(o: { port?: string; home?: string }): Promise<{ findings: Finding[]; failed: boolean }> {
  const findings: Finding[] = [];
  const add = (level: Level, what: string, hint?: string) => findings.push({ level, what, hint });
  const target = await resolveTarget(o);

  // 1. server / port
  const p = await probe(target.base);
  if (p.ok) add("ok", `svc answers at ${target.base} (port from ${target.portFrom})`);
  else if (await portInUse(target.port)) {
    add("FAIL", `port ${target.port} on 127.0.0.1 is in use, but not by an svc that answers /health (${p.error})`, "stop that program, or run svc on another port: svc serve --port N (or SVC_PORT)");
  } else add("warn", `svc is not running on port ${target.port} (port from ${target.portFrom})`, "start it with: svc serve   (or npm start)");

  // 2. data dir
  if (!existsSync(target.home)) {
    add("warn", `data dir ${target.home} does not exist yet`, "svc serve creates it (set SVC_HOME to use another)");
  } else {
    const probeFile = path.join(target.home, `.doctor-${process.pid}`);
    try {
      await writeFile(probeFile, "ok");
      await rm(probeFile, { force: true });
      add("ok", `data dir ${target.home} is writable`);
    } catch (e: any) {
      add("FAIL", `data dir ${target.home} is not writable (${e?.code ?? e})`, "fix its permissions or point SVC_HOME elsewhere");
    }
  }

  // 3. store
  const db = storeFile(target.home);
  const pgUrl = await offlinePgUrl().catch((e: Error) => {
    add("FAIL", e.message, "set SVC_DATABASE_URL to postgresql://user:password@host:5432/db, or unset it");
    return null;
  });
  if (pgUrl) await checkPgStore(pgUrl, add);
  else if (pgUrl === null) {
    // SVC_DATABASE_URL is set but unusable (reported above)
  } else if (!existsSync(db)) add("warn", `no store at ${db} yet`, "svc serve (or svc config apply) creates and migrates it");
  else {
    try {
      const { pendingMigrations, listMigrations } = await import("../prisma/migrate"); // better-sqlite3: only when there is a store to read
      const pending = pendingMigrations(db);
      if (pending.length === 0) add("ok", `store ${db} is migrated (${listMigrations().length} ${listMigrations().length === 1 ? "migration" : "migrations"} applied)`);
      else add("warn", `store ${db} has ${pending.length} pending migrations (${pending.join(", ")})`, "they are applied automatically at the next start of svc serve");
      add("info", await sqliteSize(db).catch((e) => `store ${db}: size unknown (${e?.message ?? e})`));
    } catch (e: any) {
      add("FAIL", `store ${db} cannot be read: ${e?.message ?? e}`, "is it an svc store? move it away to start fresh");
    }
  }

  // 4. objects (from the server, else the store file)
  let snap = null;
  try {
    snap = (await snapshot(o)).snap;
  } catch (e: any) {
    add("FAIL", `cannot read objects: ${e?.message ?? e}`);
  }

  // 5. models dir
  const modelsDir = snap?.modelsDir ?? resolveModelsDir(target.home, snap?.server?.modelsDir);
  if (!existsSync(modelsDir)) add("warn", `models dir ${modelsDir} does not exist`, "svc serve creates it; put GGUF files there (or set SVC_MODELS_DIR)");
  else {
    try {
      await access(modelsDir, constants.R_OK);
      const ggufs: string[] = [];
      for (const f of (await readdir(modelsDir)).filter((f) => /\.gguf$/i.test(f)).sort()) {
        const st = await stat(path.join(modelsDir, f));
        const ok = await isGguf(path.join(modelsDir, f));
        ggufs.push(`${f} (${(st.size / 1e6).toFixed(1)} MB${ok ? "" : ", not a valid GGUF"})`);
      }
      add("ok", `models dir ${modelsDir}: ${ggufs.length ? ggufs.join(", ") : "no .gguf files"}`);
    } catch (e: any) {
      add("FAIL", `models dir ${modelsDir} is not readable (${e?.code ?? e})`, "fix its permissions or set SVC_MODELS_DIR");
    }
  }

  if (snap) {
    const firstObject = findings.length;
    let healthy = 0;
    const keysEnded: string[] = [];
    for (const obj of [...snap.objects].sort((a, b) => (a.kind + a.name).localeCompare(b.kind + b.name))) {
      if (obj.kind === "Model") {
        const f = await checkModelFile(obj, modelsDir);
        if (f) {
          findings.push(f);
          continue;
        }
      }
      const ready = obj.ready;
      if (obj.deleting) add("warn", `${obj.kind}/${obj.name} is being deleted`, "its controller cleans up, then it is removed");
      else if (ready?.status === "True" && (obj.observedGeneration ?? 0) >= obj.generation) healthy++;
      else if (ready?.reason === "NotImplemented") add("info", `${obj.kind}/${obj.name}: ${ready.message}`);
      else if (obj.kind === "ApiKey" && (ready?.reason === "Revoked" || ready?.reason === "Expired")) {
        // a revoked or expired key is a normal state (kept for its audit log), not a problem
        keysEnded.push(`${obj.name} (${ready.reason.toLowerCase()})`);
      }
      else {
        const cond = ready ? `Ready=${ready.status} ${ready.reason}: ${ready.message}` : "no condition yet";
        add(snap.online ? "FAIL" : "warn", `${obj.kind}/${obj.name}: ${cond}`, hintFor(obj));
      }
    }
    if (keysEnded.length) {
      const names = keysEnded.length > 5 ? `${keysEnded.slice(0, 5).join(", ")} and ${keysEnded.length - 5} more` : keysEnded.join(", ");
      add("info", `${keysEnded.length} API ${keysEnded.length === 1 ? "key is" : "keys are"} revoked or expired, kept for the audit log: ${names}`);
    }
    const ended = keysEnded.length ? `, ${keysEnded.length} revoked or expired ${keysEnded.length === 1 ? "key" : "keys"}` : "";
    // the summary is only "ok" when no object line above is a problem
    const worst = objectFindings(findings, firstObject);
    const notReady = worst.count ? `; ${worst.count} not Ready (listed above)` : "";
    add(worst.level, `${healthy} of ${snap.objects.length} objects Ready${notReady}${ended}${snap.online ? "" : " (as last recorded; svc is not running)"}`);
  }
  return { findings, failed: findings.some((f) => f.level === "FAIL") };
}

/** The object lines (from index `from`) that are problems, and the worst level among them. */
function objectFindings(findings: Finding[], from: number): { level: Level; count: number } {
  const problems = findings.slice(from).filter((f) => f.level === "FAIL" || f.level === "warn");
  return { level: problems.some((f) => f.level === "FAIL") ? "FAIL" : problems.length ? "warn" : "ok", count: problems.length };
}

/** The last line agrees with the lines above it. */
export function verdict(findings: Finding[]): string {
  const fails = findings.filter((f) => f.level === "FAIL").length;
  const warns = findings.filter((f) => f.level === "warn").length;
  const w = `${warns} ${warns === 1 ? "warning" : "warnings"}`;
  if (fails) return `${fails} ${fails === 1 ? "check" : "checks"} failed${warns ? `, ${w}` : ""}: see the [FAIL] lines and their hints.`;
  if (warns) return `No failures; ${w}: see the [warn] lines and their hints.`;
  return "No problems found.";
}

export function registerDoctor(program: Command): void {
  addTargetOptions(program.command("doctor").description("diagnose the server, data dir, store, models and objects")).action(async (o) => {
    const { findings, failed } = await runDoctor(o);
    const tag: Record<Level, string> = { ok: "[ok]  ", warn: "[warn]", FAIL: "[FAIL]", info: "[info]" };
    const out: string[] = [];
    for (const f of findings) {
      out.push(`${tag[f.level]} ${f.what}`);
      if (f.hint) out.push(`       hint: ${f.hint}`);
    }
    out.push(verdict(findings));
    process.stdout.write(out.join("\n") + "\n");
    if (failed) process.exitCode = EXIT.failed;
  });
}

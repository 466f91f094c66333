// The composition root (boot/): open the store, apply start-up manifests (or the quickstart on an
// empty store), listen (/health answers from here on), then load the engines (boot/engines.ts)
// and controllers and serve every route, and stop gracefully in the reverse order.
// It is the one module that imports api/, controllers/ and engines/ together: api/ is routes and
// protocol shapes only, controllers/ reconcile, engines/ run; `svc serve` (cli/serve.ts) and the
// tests start svc here.
import { existsSync, readFileSync, renameSync, unlinkSync, writeFileSync } from "node:fs";
import path from "node:path";
import { mkdir, rm, readFile } from "node:fs/promises";
import { fileURLToPath } from "node:url";
import { type OpenedDb } from "../prisma/client";
import { openStore, postgresUrlOf } from "../engines/store/open"; // scale-out: SQLite, or PostgreSQL by SVC_DATABASE_URL
import { ResourceStore } from "../prisma/resource-store";
import type { Logger, Svc } from "../engines/svc";
import type { ControllerManager } from "../controllers/runtime";
import { startTracingFor } from "./tracing";
import { desiredAddress, effectiveServer, urlOf, type BoundAddress, type StartOverrides } from "../controllers/kinds/server";
import { httpListener, type HttpListener } from "./http-listener";
import { readiness, startingHandler } from "./starting";
import { startupOver } from "./memory";
import { loadEngines } from "./engines";
import { resolveHome, resolveModelsDir, serverInfoFile, storeFile, type ServerInfo } from "../engines/paths";
import type { ManifestWatcher } from "../controllers/watch";
import { pendingMigrations } from "../prisma/migrate";
import { objectSummary } from "../manifests/object-summary";
import { createLogger, svcLoggerOf } from "../api/log";
import { startupSteps, type Progress, type StartupSteps } from "../api/startup-progress";

export interface StartOptions {
  /** data dir; default SVC_HOME, <SVC_TEST_ROOT>/.svc, ~/.svc */
  home?: string;
  /** explicit port (from --port / SVC_PORT): beats the Server manifest; 0 = any free port */
  port?: number;
  /** explicit listen address: beats the Server manifest (and its exposure) */
  host?: string;
  /** manifest files/folders applied at start as source "startup" */
  config?: string[];
  /** folder to watch: plan and apply on save */
  watch?: string;
  /** apply examples/quickstart when the store is empty (default true) */
  quickstart?: boolean;
  resyncMs?: number;
  /** logger; default JSON lines on stdout at level info */
  log?: Logger;
  /** start-up progress lines (`svc serve` writes them to stderr); default: none */
  progress?: Progress;
}

export interface RunningSvc {
  url: string;
  port: number;
  host: string;
  home: string;
  svc: Svc;
  manager: ControllerManager;
  watcher?: ManifestWatcher;
  stop(): Promise<void>;
}

export const quickstartDir = fileURLToPath(new URL("../examples/quickstart/", import.meta.url));

// Logging lives in api/log.ts; jsonLogger stays importable from here for tests and benches.
export { jsonLogger } from "../api/log";

/** Start svc. /health answers once the listener is bound (early); resolves once the engines are
 * loaded and the controllers run. */
export async function startSvc(opts: StartOptions = {}): Promise<RunningSvc> {
  const log = opts.log ?? createLogger();
  const steps = startupSteps(opts.progress);
  const home = resolveHome(opts.home);
  await mkdir(home, { recursive: true });
  const file = storeFile(home);
  const shared = postgresUrlOf(process.env) !== undefined; // scale-out: PostgreSQL by SVC_DATABASE_URL
  // One svc serve per SQLite data dir, taken before the store is opened (migrated): a second one
  // would run the controllers on the same store, fold the first one's reservation journals
  // (engines/gateway/limits/wal.ts) and take server.json over. Shared-store replicas coordinate
  // through PostgreSQL and Redis instead.
  const releaseLock = shared ? async () => undefined : takeServeLock(home);
  const pending = shared ? 0 : countPending(file);
  const storeStep = shared ? "opening the shared store (SVC_DATABASE_URL)" : !existsSync(file) ? `creating the store ${file}` : pending ? `applying ${pending} ${pending === 1 ? "migration" : "migrations"} to the store ${file}` : `opening the store ${file}`;
  let db: OpenedDb;
  try {
    db = await steps.run(storeStep, () => openStore(home, { warn: (m) => log.warn(m) }), { announce: pending > 0 });
  } catch (e) {
    await releaseLock();
    throw e;
  }
  const cleanup: Array<() => Promise<unknown>> = [releaseLock, () => db.close()];
  const undo = async () => {
    for (const f of cleanup.reverse()) await f().catch(() => undefined);
  };

  try {
    const store = await ResourceStore.open(db.prisma, db.repos.resources);
    cleanup.push(() => store.close());

    const applyPaths = async (...a: Parameters<typeof import("../controllers/apply-paths").applyPaths>) => (await import("../controllers/apply-paths")).applyPaths(...a);
    if (opts.config?.length) {
      // --config is the desired state of source "startup": say what that implies, since it is not
      // what `svc config apply` does by default (and an empty store then gets no quickstart)
      const label = `applying start-up config ${opts.config.join(" ")} as source "startup" (with prune: objects of that source it no longer declares are deleted; high-risk changes are confirmed)`;
      const r = await steps.run(label, () => applyPaths(store, opts.config!, { source: "startup", prune: true, pruneAllKinds: true, confirm: true }), { announce: true });
      steps.say(`start-up config: ${r.applied} ${r.applied === 1 ? "change" : "changes"} applied${store.list({ includeDeleting: true }).length && opts.quickstart !== false ? "; the quickstart is not applied (the store is not empty)" : ""}`);
      log.info("applied start-up config", { paths: opts.config, changes: r.applied, revision: r.revision });
    }
    const quickstart = opts.quickstart !== false && store.list({ includeDeleting: true }).length === 0;
    if (quickstart) {
      const r = await steps.run(`empty store: applying the quickstart (${quickstartDir})`, () => applyPaths(store, [quickstartDir], { source: "quickstart", prune: false, confirm: true }), { announce: true });
      log.info("empty store: applied the quickstart", { dir: quickstartDir, changes: r.applied, revision: r.revision });
    }

    const serverObj = store.list({ kind: "Server" }).sort((a, b) => a.name.localeCompare(b.name))[0];
    const eff = effectiveServer(serverObj?.spec);
    const stopTracing = await startTracingFor(eff, log); // OTLP traces when configured (boot/tracing.ts)
    cleanup.push(stopTracing);
    const ready = readiness();
    const svc: Svc = {
      home,
      modelsDir: resolveModelsDir(home, eff.modelsDir),
      db,
      store,
      log,
      server: eff,
      engines: {},
      readiness: ready,
    };

    const overrides = { host: opts.host, port: opts.port };
    const want = desiredAddress(eff, overrides);
    // Bind first: /health answers from here on; other requests wait for the routes (boot/starting.ts).
    const starting = startingHandler({
      revision: () => store.revision,
      readiness: ready,
      status: () => ({ url: urlOf(listener.address() ?? want), pid: process.pid, home, modelsDir: svc.modelsDir, revision: store.revision, loading: ready.loading(), server: svc.server, objects: store.list({ includeDeleting: true }).map(objectSummary) }),
    });
    let info: ServerInfo | null = null;
    const infoFile = serverInfoFile(home);
    const listener = httpListener(starting.handler, log, (a) => {
      info = { pid: process.pid, url: urlOf(a), port: a.port, startedAt: info?.startedAt ?? new Date().toISOString() };
      writeInfoFile(infoFile, info, log);
    }, () => (svc.server.limits?.requestTimeoutSeconds ?? 600) * 1000);
    await listener.bind(want.host, want.port).catch((e: any) => {
      const hint = e?.code === "EADDRINUSE" ? " (another process uses this port; pass --port or set SVC_PORT)" : "";
      throw new Error(`cannot listen on ${urlOf(want)}: ${e?.code ?? e?.message ?? e}${hint}`);
    });
    cleanup.push(() => listener.close(2000));
    cleanup.push(() => removeInfoFile(infoFile)); // a start that fails after binding leaves no server.json behind
    steps.say(`bound ${urlOf(listener.address() ?? want)}: /health answers; loading the engines (/ready says when they are)`);

    let loaded;
    try {
      loaded = await ready.step("engines and controllers", () => loadAll(svc, { store, quickstart, steps, cleanup, listener, overrides, want, resyncMs: opts.resyncMs }));
    } catch (e: any) {
      starting.failed(String(e?.message ?? e));
      throw e;
    }
    const { manager: mgr, cluster, mcp, handler } = loaded;
    // requests that came while svc loaded are served once the controllers' first pass is done (a
    // model is registered before a chat names it); those that come from now on at once
    const firstPass = ready.step("the controllers' first pass", () => settled(mgr, 5000));
    starting.ready(handler, firstPass);
    void firstPass.then(startupOver, startupOver); // the young generation may grow with load (boot/memory.ts)

    let watcher: ManifestWatcher | undefined;
    if (opts.watch) {
      const { ManifestWatcher } = await import("../controllers/watch");
      watcher = new ManifestWatcher({ store, dir: opts.watch, log });
      await watcher.start();
    }

    let stopping: Promise<void> | null = null;
    const stop = () =>
      (stopping ??= (async () => {
        log.info("stopping");
        await watcher?.stop().catch(() => undefined);
        // Stop accepting and let in-flight requests finish within the grace. Streams still
        // running 3 s in are told to end (generation cancelled, each protocol's terminal error
        // frame written) so that none is cut mid-frame when the grace runs out at 5 s.
        await mcp.closeSessions(); // end /mcp client streams, which would hold the listener open
        await svc.engines.downloads?.close(); // model downloads cancelled, their temp files kept to resume at the next start
        const { endStreams, forgetStopped } = await import("../api/stream-shutdown");
        const port = listener.address()?.port;
        let ending: Promise<void> | undefined;
        const streamsTimer = setTimeout(() => (ending = port === undefined ? undefined : endStreams(port, 1500)), 3000);
        await listener.close(5000);
        clearTimeout(streamsTimer);
        await ending;
        forgetStopped(port);
        await cluster.close(); // give the reconciler lease up first
        await mgr.stop(); // let running reconciles finish
        mgr.detach();
        await svc.engines.agents?.close().catch((e) => log.warn("agents close failed", { err: String(e?.message ?? e) })); // unfinished tasks -> failed/interrupted
        await svc.engines.memory?.close().catch((e) => log.warn("memory close failed", { err: String(e?.message ?? e) })); // pending signals stay for the next start
        await svc.engines.media?.close().catch((e) => log.warn("media close failed", { err: String(e?.message ?? e) })); // image calls still running -> interrupted
        svc.engines.pairing?.close();
        await mcp.close().catch((e) => log.warn("mcp engine close failed", { err: String(e?.message ?? e) }));
        await svc.engines.gateway?.close().catch((e) => log.warn("gateway close failed", { err: String(e?.message ?? e) }));
        await svc.engines.pool?.close().catch((e) => log.warn("model pool close failed", { err: String(e?.message ?? e) }));
        await store.close(); // flush batched status writes
        await db.close();
        await stopTracing(); // the last spans exported
        await removeInfoFile(infoFile);
        await releaseLock();
        log.info("stopped");
        await svcLoggerOf(log)?.flush();
      })());

    // url/port are read live: the Server controller may move the listener later
    const running: RunningSvc = {
      get url() {
        return urlOf(listener.address() ?? want);
      },
      get port() {
        return (listener.address() ?? want).port;
      },
      get host() {
        return (listener.address() ?? want).host;
      },
      home,
      svc,
      manager: mgr,
      watcher,
      stop,
    };
    return running;
  } catch (e) {
    await undo();
    throw e;
  }
}

interface LoadInput {
  store: ResourceStore;
  quickstart: boolean;
  steps: StartupSteps;
  cleanup: Array<() => Promise<unknown>>;
  listener: HttpListener;
  overrides: StartOverrides;
  want: BoundAddress;
  resyncMs?: number;
}

/** After binding: the built-in model (first start), the engines, the routes and the controllers. */
async function loadAll(svc: Svc, i: LoadInput) {
  const { store, steps, cleanup, listener, want } = i;
  const log = svc.log;
  await mkdir(svc.modelsDir, { recursive: true }).catch((e) => log.warn("cannot create models dir", { dir: svc.modelsDir, err: String(e?.message ?? e) }));
  if (i.quickstart) {
    // The embedded default model: generated, since no weights can be downloaded here.
    const { ensureTinyModel, defaultModelPath } = await import("../engines/inference/gguf");
    const tiny = defaultModelPath(svc.modelsDir);
    if (existsSync(tiny)) await ensureTinyModel(svc.modelsDir);
    else await svc.readiness!.step("the built-in model", () => steps.run(`generating the built-in model ${tiny}`, () => ensureTinyModel(svc.modelsDir), { announce: true }));
  }
  const { cluster, mcp } = await loadEngines(svc, store, steps, cleanup);
  const handler = (await import("../api/app")).createHandler(svc);

  // Controllers (registered in controllers/registry.ts only). Attaching feeds the engines every
  // stored key, policy, provider, model and alert setting, and keeps them following the store,
  // before the routes serve; reconciling starts below (or once this replica holds the lease).
  const [{ ControllerManager }, { buildControllers }] = await Promise.all([import("../controllers/runtime"), import("../controllers/registry")]);
  let manager: ControllerManager | null = null;
  const set = await buildControllers({ svc, listener, overrides: i.overrides, enqueue: (ref) => manager?.enqueue(ref) });
  const mgr: ControllerManager = (manager = new ControllerManager({ store, controllers: set.controllers, fallback: set.fallback, log, resyncMs: i.resyncMs }));
  mgr.attach();
  cleanup.push(async () => mgr.detach());
  svc.control = {
    enqueue: (ref) => mgr.enqueue(ref),
    waitForReady: (refs, gens, ms) => mgr.waitForReady(refs, gens, ms),
    owners: set.owners,
    listenUrl: () => urlOf(listener.address() ?? want),
  };
  svc.engines.metrics?.watch(mgr); // reconcile results by kind
  await cluster.runControllers(mgr); // now, or once this replica holds the lease (engines/cluster/lease.ts)
  cleanup.push(() => mgr.stop());
  return { manager: mgr, cluster, mcp, handler };
}

/** Resolves once the controllers have nothing queued or running, or after `ms`. */
function settled(mgr: ControllerManager, ms: number): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<void>((resolve) => (timer = setTimeout(resolve, ms)));
  return Promise.race([mgr.idle(), late]).finally(() => clearTimeout(timer));
}

/** Migrations openDb will apply, for the progress line; a file it cannot read counts none and
 * openDb reports the real problem. */
function countPending(file: string): number {
  try {
    return pendingMigrations(file).length;
  } catch {
    return 0;
  }
}

/**
 * The CLI finds a running server through server.json. Written synchronously and renamed into
 * place, so a reader right after a bind or move never sees the old address or half a file.
 */
function writeInfoFile(file: string, info: ServerInfo, log: Logger): void {
  try {
    writeFileSync(`${file}.tmp`, JSON.stringify(info, null, 2) + "\n");
    renameSync(`${file}.tmp`, file);
  } catch (e) {
    log.warn("cannot write server.json", { err: String(e) });
  }
}

/**
 * `<home>/serve.lock` holds the pid of the svc serve using the data dir. Created exclusively; one
 * left by a process that is gone (kill -9, a crash), or by this process (an earlier start in it,
 * or the same pid in a restarted container), is taken over. Returns its release.
 */
function takeServeLock(home: string): () => Promise<void> {
  const file = path.join(home, "serve.lock");
  for (let attempt = 0; ; attempt++) {
    try {
      writeFileSync(file, JSON.stringify({ pid: process.pid, startedAt: new Date().toISOString() }) + "\n", { flag: "wx" });
      break;
    } catch (e: any) {
      if (e?.code !== "EEXIST" || attempt >= 3) throw e;
    }
    let pid = 0;
    try {
      pid = Number(JSON.parse(readFileSync(file, "utf8")).pid) || 0;
    } catch {
      /* half-written or unreadable: a start that died at once; taken over below */
    }
    if (pid && pid !== process.pid && pidAlive(pid)) {
      const info = readInfo(serverInfoFile(home));
      const where = info?.pid === pid ? ` at ${info.url}` : "";
      throw Object.assign(new Error(`another svc serve (pid ${pid}${where}) runs on the data dir ${home} (${file})`), { code: "ESVCRUNNING", lockFile: file });
    }
    try {
      unlinkSync(file); // stale: its process is gone
    } catch {
      /* another start took it over first: try again */
    }
  }
  let released = false;
  return async () => {
    if (released) return;
    released = true;
    try {
      if (Number(JSON.parse(readFileSync(file, "utf8")).pid) === process.pid) unlinkSync(file);
    } catch {
      /* gone already */
    }
  };
}

function pidAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (e: any) {
    return e?.code === "EPERM"; // alive, another user's
  }
}

function readInfo(file: string): ServerInfo | null {
  try {
    return JSON.parse(readFileSync(file, "utf8")) as ServerInfo;
  } catch {
    return null;
  }
}

/** Remove server.json only if this process wrote it (another server may own the home now). */
async function removeInfoFile(file: string): Promise<void> {
  try {
    const cur = JSON.parse(await readFile(file, "utf8")) as ServerInfo;
    if (cur.pid === process.pid) await rm(file, { force: true });
  } catch {
    /* absent or unreadable: nothing to remove */
  }
}

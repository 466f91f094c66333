// Watch mode (`svc serve --watch DIR`): on every save, load the whole folder, plan with the
// folder's own source and prune within it, and apply. Saving a file is the confirmation, so
// high-risk changes apply without --yes. An invalid save changes nothing: the error is reported
// with file:line:col and the last good state keeps serving.
import { EventEmitter } from "node:events";
import { stat } from "node:fs/promises";
import path from "node:path";
import { watch, type FSWatcher } from "chokidar";
import type { ResourceStore } from "../prisma/resource-store";
import type { Logger } from "../engines/svc";
import type { ManifestIssue, Plan } from "../manifests/types";
import { applyPaths } from "./apply-paths";

const MANIFEST_FILE = /\.(ya?ml|json)$/i;

export interface WatchOptions {
  store: ResourceStore;
  dir: string;
  log: Logger;
  /** quiet time after the last file event before applying (default 75 ms) */
  debounceMs?: number;
}

export interface WatchApplied {
  revision: number;
  applied: number;
  plan: Plan;
  warnings: ManifestIssue[];
  /** from the first file event of this batch to the store write */
  latencyMs: number;
}

export interface WatchFailed {
  message: string;
  issues: ManifestIssue[];
  error: unknown;
}

/** Events: "applied" (WatchApplied), "error" (WatchFailed). */
export class ManifestWatcher extends EventEmitter {
  readonly dir: string;
  readonly source: string;
  private readonly store: ResourceStore;
  private readonly log: Logger;
  private readonly debounceMs: number;
  private fsw: FSWatcher | null = null;
  private timer: NodeJS.Timeout | null = null;
  private running: Promise<void> | null = null;
  private rerun = false;
  private firstEventAt = 0;
  private stopped = false;
  private rearmTimer: NodeJS.Timeout | null = null;
  private rearming = false;
  /** the watched folder's identity when it was last watched (inode and birth time) */
  private dirId = "";

  constructor(opts: WatchOptions) {
    super();
    this.dir = path.resolve(opts.dir);
    this.source = `watch:${this.dir}`;
    this.store = opts.store;
    this.log = opts.log;
    this.debounceMs = opts.debounceMs ?? 75;
  }

  /** Apply the folder once, then watch it. */
  async start(): Promise<void> {
    const st = await stat(this.dir).catch(() => null);
    if (!st?.isDirectory()) throw new Error(`watch folder ${this.dir} does not exist or is not a folder`);
    await this.arm();
    this.log.info("watching manifests", { dir: this.dir, source: this.source });
    this.firstEventAt = Date.now();
    await this.sync();
  }

  private async arm(): Promise<void> {
    this.dirId = folderId(await stat(this.dir).catch(() => null));
    const fsw = watch(this.dir, {
      ignoreInitial: true,
      ignored: (p) => path.basename(p).startsWith(".") && p !== this.dir,
    });
    this.fsw = fsw;
    fsw.on("all", (event, file) => {
      if (event === "addDir") return;
      if (event !== "unlinkDir" && !MANIFEST_FILE.test(file)) return;
      this.schedule();
    });
    fsw.on("error", (e) => this.log.warn("watch error", { dir: this.dir, err: String((e as Error)?.message ?? e) }));
    await new Promise<void>((resolve) => fsw.once("ready", () => resolve()));
  }

  /**
   * The folder itself was removed or replaced (`rm -rf DIR` and a fresh copy, an unpacked
   * archive): the file watch on it is gone with it and saw nothing more, so every later save
   * was missed for good. Look for the folder every second and watch it again once it is back.
   */
  private async checkFolder(): Promise<void> {
    const st = await stat(this.dir).catch(() => null);
    if (!st?.isDirectory()) this.dirId = ""; // gone: whatever comes back is another folder
    else if (folderId(st) === this.dirId) return;
    this.watchForReturn();
  }

  private watchForReturn(): void {
    if (this.rearmTimer || this.stopped) return;
    this.rearmTimer = setInterval(() => {
      void (async () => {
        if (this.rearming || this.stopped) return;
        const st = await stat(this.dir).catch(() => null);
        if (!st?.isDirectory() || folderId(st) === this.dirId || this.stopped || this.rearming) return;
        this.rearming = true;
        try {
          if (this.rearmTimer) clearInterval(this.rearmTimer);
          this.rearmTimer = null;
          await this.fsw?.close().catch(() => undefined);
          if (this.stopped) return;
          await this.arm();
          if (this.stopped) return void (await this.fsw?.close());
          this.log.info("watch folder is back: watching it again", { dir: this.dir });
          this.schedule();
        } catch (e) {
          // never an unhandled rejection from a timer: say it, and look again in a second
          this.log.warn("watch error", { dir: this.dir, err: String((e as Error)?.message ?? e) });
          this.dirId = "";
          setImmediate(() => this.watchForReturn());
        } finally {
          this.rearming = false;
        }
      })();
    }, 1000);
    this.rearmTimer.unref();
  }

  private schedule(): void {
    if (this.stopped) return;
    if (!this.timer) this.firstEventAt = Date.now();
    else clearTimeout(this.timer);
    this.timer = setTimeout(() => {
      this.timer = null;
      void this.sync();
    }, this.debounceMs);
  }

  /** Load, plan and apply the folder now. Runs one at a time; a request during a run runs after it. */
  sync(): Promise<void> {
    if (this.running) {
      this.rerun = true;
      return this.running;
    }
    this.running = (async () => {
      do {
        this.rerun = false;
        await this.once_();
      } while (this.rerun && !this.stopped);
    })().finally(() => {
      this.running = null;
    });
    return this.running;
  }

  private async once_(): Promise<void> {
    const started = this.firstEventAt || Date.now();
    try {
      const r = await applyPaths(this.store, [this.dir], { source: this.source, prune: true, pruneAllKinds: true, allowPruneAll: false, confirm: true });
      for (const w of r.warnings) this.log.warn("manifest warning", { message: w.message, path: w.path, at: w.pos ? `${w.pos.file}:${w.pos.line}:${w.pos.column}` : undefined });
      const ev: WatchApplied = { revision: r.revision, applied: r.applied, plan: r.plan, warnings: r.warnings, latencyMs: Date.now() - started };
      if (r.applied > 0) this.log.info(`applied ${r.applied} changes (revision ${r.revision})`, { dir: this.dir, latencyMs: ev.latencyMs });
      else this.log.info("no changes", { dir: this.dir });
      this.emit("applied", ev);
    } catch (e: any) {
      const issues: ManifestIssue[] = Array.isArray(e?.issues) ? e.issues : [];
      const message = e?.name === "PruneAllRefusedError"
        ? `refusing to prune: the folder ${this.dir} holds no manifests, and applying it would delete every object it declared: nothing was changed and its objects are kept. To remove them, apply an empty document to this source: svc config apply --prune --allow-prune-all --source "${this.source}" <empty file>`
        : String(e?.message ?? e);
      this.log.error(`watch: nothing applied: ${message}`, { dir: this.dir });
      const ev: WatchFailed = { message, issues, error: e };
      // "error" on an EventEmitter throws when nobody listens: only emit it to listeners
      if (this.listenerCount("error") > 0) this.emit("error", ev);
    } finally {
      this.firstEventAt = 0;
      await this.checkFolder();
    }
  }

  async stop(): Promise<void> {
    this.stopped = true;
    if (this.rearmTimer) clearInterval(this.rearmTimer);
    this.rearmTimer = null;
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    await this.fsw?.close();
    await this.running;
  }
}

function folderId(st: { ino: number; birthtimeMs: number } | null): string {
  return st ? `${st.ino}:${st.birthtimeMs}` : "";
}

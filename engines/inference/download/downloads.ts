// Model downloads into the models dir with node-llama-cpp's own downloader (createModelDownloader:
// hf: URIs, URLs, split GGUFs, parallel connections, resumable temp files). svc adds what a
// server needs around it: one download per source however many callers pull it, a staging dir
// so a failed, cancelled or half-written download never replaces the file being served, a free
// disk check, verification (size, and the hub's SHA-256) before the files move into place, and a
// record of what was pulled from where.
import { createHash } from "node:crypto";
import { mkdir, open, readdir, readFile, rename, rm, stat, statfs } from "node:fs/promises";
import path from "node:path";
import { SvcError } from "../../errors";
import { PullJob, type PullResult } from "./job";
import { completeRecord, PARTIAL_DIR, writeRecord, type DownloadRecord } from "./records";
import { parseSource } from "./source";
import { hubFileUrls, isHubUrl } from "./hub-urls";
import { hubFileMeta, sha256File, type HubFileMeta } from "./verify";

export interface PullOptions {
  /** save the (entry) file under this name in the models dir */
  fileName?: string;
  /** Hugging Face endpoint (a mirror); default SVC_HF_ENDPOINT, then node-llama-cpp's HF_ENDPOINT */
  endpoint?: string;
  /** access token for gated repositories (already resolved from its secret reference) */
  token?: string;
  /** expected SHA-256 of the entry file, besides the hub's own */
  sha256?: string;
  /** check the hub even when a complete download of this source is on disk (a pull) */
  refresh?: boolean;
  /** told once when another process is downloading this source and this pull waits for it */
  onWait?: (message: string) => void;
}

/** How long a failed download waits before a reconcile may start it again. */
export const RETRY_AFTER_MS = 30_000;

interface FileInfo {
  fileName: string;
  filePath: string;
  totalSize: number;
  /** what the hub said of it before the download */
  meta: HubFileMeta;
}

/** How long a shutdown waits for downloads to close their files. */
const CLOSE_WAIT_MS = 3000;

const delay = (ms: number) => new Promise<void>((r) => setTimeout(r, ms).unref());

/** Rejects with the signal's reason once `cancel` has closed the download's files (bounded): the
 * downloader's own promise does not settle when it is cancelled mid-transfer. */
function cancelledBy(signal: AbortSignal, cancel: () => Promise<void>): Promise<never> {
  return new Promise<never>((_, reject) => {
    const stop = () => void Promise.race([cancel().catch(() => undefined), delay(CLOSE_WAIT_MS)]).then(() => reject(signal.reason));
    if (signal.aborted) stop();
    else signal.addEventListener("abort", stop, { once: true });
  });
}

/** Bytes already in the staging dir (a download being resumed). */
async function stagedBytes(dir: string): Promise<number> {
  const names = await readdir(dir).catch(() => [] as string[]);
  const sizes = await Promise.all(names.map((n) => stat(path.join(dir, n)).then((s) => s.size, () => 0)));
  return sizes.reduce((a, b) => a + b, 0);
}

/** How often a pull waits on another process's download of the same source looks again. */
const LOCK_POLL_MS = 250;
/** not unref'd: a CLI pull waiting on the lock has nothing else keeping it alive */
const lockPoll = () => new Promise<void>((r) => setTimeout(r, LOCK_POLL_MS));

const aliveElsewhere = (pid: number): boolean => {
  // our own pid on a lock is a leftover of an earlier process that had it (pid 1 in a container):
  // within this process, one job per source already guarantees a single download
  if (!Number.isInteger(pid) || pid <= 0 || pid === process.pid) return false;
  try {
    process.kill(pid, 0);
    return true;
  } catch (e) {
    return (e as NodeJS.ErrnoException).code === "EPERM"; // alive, someone else's
  }
};

/** Holds `<staging>.lock` for this process: `svc models pull` and a running svc (or two pulls)
 * are separate processes sharing one staging dir, where two downloaders writing the same temp
 * file, and the first one's clean-up removing it under the second, failed one of them with ENOENT
 * (or appended the other's progress to the finished file). The second waits for the first, then
 * finds its record. A lock whose process is gone (kill -9) is taken over. Returns the release. */
async function lockStaging(staging: string, signal: AbortSignal, waiting: () => void): Promise<() => Promise<void>> {
  const lock = `${staging}.lock`;
  for (let told = false; ; ) {
    if (signal.aborted) throw signal.reason;
    try {
      const fh = await open(lock, "wx");
      await fh.writeFile(String(process.pid));
      await fh.close();
      return () => rm(lock, { force: true });
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== "EEXIST") throw e;
    }
    const holder = Number((await readFile(lock, "utf8").catch(() => "")).trim());
    if (!aliveElsewhere(holder)) {
      // an empty lock may be one being written this instant: only a stale pid is removed at once
      if (holder || (await stat(lock).then((st) => Date.now() - st.mtimeMs > 5000, () => true))) await rm(lock, { force: true });
      else await lockPoll();
      continue;
    }
    if (!told) waiting();
    told = true;
    await lockPoll();
  }
}

export class ModelDownloads {
  private readonly jobs = new Map<string, PullJob>();
  private readonly failures = new Map<string, { at: number; error: Error }>();

  constructor(
    readonly modelsDir: string,
    private readonly log: (msg: string) => void = () => {},
  ) {}

  private key(source: string, o: PullOptions): string {
    // the file name as run() uses it (its base name): one key per staging dir, which the lock
    // between processes relies on within this process
    return `${parseSource(source).uri}\0${o.fileName ? path.basename(o.fileName) : ""}`;
  }

  /** The download under way for a source, if any. */
  active(source: string, o: PullOptions = {}): PullJob | undefined {
    const j = this.jobs.get(this.key(source, o));
    return j && !j.finished ? j : undefined;
  }

  /** A recent failure of this source (a reconcile does not retry it before RETRY_AFTER_MS). */
  recentFailure(source: string, o: PullOptions = {}): Error | undefined {
    const f = this.failures.get(this.key(source, o));
    return f && Date.now() - f.at < RETRY_AFTER_MS ? f.error : undefined;
  }

  /** Start (or join) the download of a source. */
  pull(source: string, o: PullOptions = {}): PullJob {
    const key = this.key(source, o);
    const running = this.jobs.get(key);
    if (running && !running.finished) return running;
    const job = new PullJob(parseSource(source).uri, (j) => this.run(j, o));
    this.jobs.set(key, job);
    job.done.then(
      () => this.failures.delete(key),
      (error: Error) => {
        this.failures.set(key, { at: Date.now(), error });
        this.log(`model download failed: ${source}: ${error.message}`);
      },
    );
    return job;
  }

  /** Cancel every download (shutdown): temp files stay, so the next start resumes them. A job
   * still resolving its source (which the downloader cannot cancel) is not waited for long. */
  async close(): Promise<void> {
    for (const j of this.jobs.values()) if (!j.finished) j.abort.abort(new Error("svc is shutting down"));
    await Promise.race([Promise.allSettled([...this.jobs.values()].map((j) => j.done)), delay(CLOSE_WAIT_MS)]);
  }

  private async run(job: PullJob, o: PullOptions): Promise<PullResult> {
    const info = parseSource(job.progress.source);
    const fileName = o.fileName ? path.basename(o.fileName) : undefined;
    const quick = await completeRecord(this.modelsDir, info.uri, fileName);
    if (quick && !o.refresh && (!o.sha256 || quick.files[0]?.sha256 === o.sha256.toLowerCase())) return { record: quick, downloaded: false };
    const staging = path.join(this.modelsDir, PARTIAL_DIR, createHash("sha256").update(`${info.uri}\0${fileName ?? ""}`).digest("hex").slice(0, 16));
    await mkdir(path.dirname(staging), { recursive: true });
    // one process at a time downloads a source into its staging dir (see lockStaging)
    const unlock = await lockStaging(staging, job.abort.signal, () => {
      const msg = `waiting for another process downloading ${info.uri} into ${this.modelsDir}`;
      this.log(msg);
      o.onWait?.(msg);
    });
    try {
      return await this.runLocked(job, o, info, fileName, staging);
    } finally {
      await unlock();
    }
  }

  private async runLocked(job: PullJob, o: PullOptions, info: ReturnType<typeof parseSource>, fileName: string | undefined, staging: string): Promise<PullResult> {
    // read again under the lock: another process may have finished this download meanwhile
    const have = await completeRecord(this.modelsDir, info.uri, fileName);
    if (have && !o.refresh && (!o.sha256 || have.files[0]?.sha256 === o.sha256.toLowerCase())) return { record: have, downloaded: false };
    await mkdir(staging, { recursive: true });
    const endpoint = o.endpoint ?? process.env.SVC_HF_ENDPOINT;
    // the hub's word on every file first: a missing or unreachable file fails at once with its
    // reason (the downloader would retry it for minutes), and the disk is checked before the
    // downloader sizes its work
    const signal = job.abort.signal;
    const urls = await hubFileUrls(info.uri, { endpoint, token: o.token, signal });
    const metas = await Promise.all(urls.map((u) => hubFileMeta(u, this.authHeaders(o, u, endpoint), signal)));
    const problem = metas.find((m) => m.problem)?.problem;
    if (problem) throw new SvcError("upstream", "upstream_error", `cannot download ${info.uri}: ${problem}`, "source");
    if (!have) await this.checkDisk(metas.reduce((n, m) => n + (m.sizeBytes ?? 0), 0) - (await stagedBytes(staging)));
    const { createModelDownloader } = await import("node-llama-cpp");
    const dl = await createModelDownloader({
      modelUri: info.uri,
      dirPath: staging,
      ...(fileName ? { fileName } : {}),
      skipExisting: true, // a staged file already whole (crash before verification) is not fetched again
      deleteTempFileOnCancel: false, // a cancelled or killed download resumes from its temp file
      ...(o.token ? { tokens: { huggingFace: o.token } } : {}),
      ...(endpoint ? { endpoints: { huggingFace: endpoint } } : {}),
      onProgress: (s) => job.update({ phase: "downloading", total: s.totalSize, completed: s.downloadedSize, rate: Math.round(s.averageSpeed || 0) }),
    }).catch((e: Error) => {
      throw new SvcError("upstream", "upstream_error", `cannot resolve ${info.uri}: ${e.message}`, "source");
    });
    // svc's URLs name the same files as the downloader's, in order, or none is trusted
    const known = metas.length === dl.filesInfo.length;
    const files: FileInfo[] = dl.filesInfo.map((f, i) => ({ ...f, meta: known ? metas[i]! : {} }));
    job.update({ phase: "downloading", total: dl.totalSize, completed: dl.downloadedSize, files: files.length });
    if (have && this.unchanged(have, files)) {
      // unchanged at the hub is "up to date" only when the file on disk also has the digest the
      // caller expects (--sha256, download.sha256); else a pull said "up to date" for a file that
      // fails the check, and the Model controller (which sees the mismatch) pulled again forever
      const want = o.sha256?.toLowerCase();
      if (!want || have.files[0]?.sha256 === want) {
        await rm(staging, { recursive: true, force: true });
        return { record: have, downloaded: false };
      }
      // the hub's digest says its file is the one on disk: fetching it again cannot match either
      if (files[0]?.meta.sha256) {
        await rm(staging, { recursive: true, force: true });
        throw new SvcError("upstream", "upstream_error", `download of ${info.uri} refused: ${have.files[0]?.name} sha256 digest mismatch: expected ${want}, the hub's file (and the one on disk) has ${have.files[0]?.sha256}; the previous file stays in place`, "source");
      }
    }
    await this.checkDisk(dl.totalSize - dl.downloadedSize);
    try {
      await Promise.race([dl.download(), cancelledBy(signal, () => dl.cancel())]);
    } catch (e) {
      const why = job.abort.signal.aborted ? `cancelled (${(job.abort.signal.reason as Error)?.message ?? "aborted"})` : (e as Error).message;
      throw new SvcError("upstream", "upstream_error", `download of ${info.uri} did not finish: ${why}; what was fetched is kept to resume, and the previous file (if any) stays in place`, "source");
    }
    job.update({ phase: "downloading", completed: dl.totalSize }, true); // the last bytes, never throttled away
    job.update({ phase: "verifying sha256 digest" });
    const verified = await this.verify(files, o, info.uri);
    job.update({ phase: "writing manifest", digest: `sha256:${verified[0]?.sha256}` });
    for (const f of files) await rename(f.filePath, path.join(this.modelsDir, f.fileName));
    const record: DownloadRecord = {
      source: info.uri,
      file: dl.entrypointFilename,
      files: verified,
      sizeBytes: verified.reduce((n, f) => n + f.sizeBytes, 0),
      ...(info.quant ? { quant: info.quant } : {}),
      pulledAt: new Date().toISOString(),
    };
    await writeRecord(this.modelsDir, record);
    await rm(staging, { recursive: true, force: true });
    return { record, downloaded: true };
  }

  /** A pull of a source already on disk: unchanged when the hub's sizes and digests match the record. */
  private unchanged(have: DownloadRecord, files: FileInfo[]): boolean {
    if (files.length !== have.files.length) return false;
    for (const [i, f] of files.entries()) {
      const rec = have.files[i]!;
      if (rec.name !== f.fileName || rec.sizeBytes !== f.totalSize) return false;
      if (f.meta.sha256 && f.meta.sha256 !== rec.sha256) return false;
    }
    return true;
  }

  /** The token goes to the hub only: a URL source on another host (or a mirror's file URL that
   * is not on the mirror) must not receive the HF token, as node-llama-cpp's downloader does not send it there. */
  private authHeaders(o: PullOptions, url: string, endpoint?: string): Record<string, string> {
    return o.token && isHubUrl(url, endpoint) ? { authorization: `Bearer ${o.token}` } : {};
  }

  private async checkDisk(needed: number): Promise<void> {
    if (needed <= 0) return;
    const fs = await statfs(this.modelsDir).catch(() => undefined);
    if (!fs) return;
    const free = fs.bavail * fs.bsize;
    if (free < needed) {
      throw new SvcError("unavailable", "service_unavailable", `not enough free disk space in ${this.modelsDir}: the download needs ${needed} bytes, ${free} are free`);
    }
  }

  /** Every staged file at the size the server sent and the hub lists, and at the hub's (and the
   * spec's) SHA-256. A file that fails is deleted from staging: resuming it would keep bad bytes. */
  private async verify(files: FileInfo[], o: PullOptions, uri: string): Promise<DownloadRecord["files"]> {
    const out: DownloadRecord["files"] = [];
    for (const [i, f] of files.entries()) {
      const meta = f.meta;
      const size = (await stat(f.filePath)).size;
      const refuse = async (what: string) => {
        await rm(f.filePath, { force: true });
        return new SvcError("upstream", "upstream_error", `download of ${uri} refused: ${f.fileName} ${what}; the previous file (if any) stays in place`, "source");
      };
      const want = [meta.sha256, i === 0 ? o.sha256?.toLowerCase() : undefined].filter((x): x is string => !!x);
      // a server that sends no Content-Length (chunked) and a hub that lists no size leave the
      // downloader's total at 0: that is no size to compare with (it refused every such file as
      // "the hub lists 0", even with the right --sha256). Then a digest must vouch for the bytes.
      const sizeUnknown = f.totalSize <= 0 && meta.sizeBytes === undefined;
      if (sizeUnknown && want.length === 0) throw await refuse(`unverifiable: the server sent no size (Content-Length) and no SHA-256 is known to check its ${size} bytes against; give the expected one (download.sha256, or --sha256)`);
      const expectedSize = meta.sizeBytes ?? f.totalSize;
      if (!sizeUnknown && (size !== f.totalSize || size !== expectedSize)) throw await refuse(`has ${size} bytes, the hub lists ${expectedSize}`);
      const sha256 = await sha256File(f.filePath);
      for (const w of want) if (w !== sha256) throw await refuse(`sha256 digest mismatch: expected ${w}, got ${sha256}`);
      out.push({ name: f.fileName, sizeBytes: size, sha256, ...(meta.sha256 ? { hubSha256: meta.sha256 } : {}) });
    }
    return out;
  }
}

/** The one downloads engine of a running svc (its `engines.downloads`), created on first need by
 * the Model controller or the pull route, whichever comes first. */
export function downloadsOf(svc: { engines: { downloads?: ModelDownloads }; modelsDir: string; log: { warn(msg: string): void } }): ModelDownloads {
  return (svc.engines.downloads ??= new ModelDownloads(svc.modelsDir, (msg) => svc.log.warn(msg)));
}

// Model downloads into the models dir with node-llama-cpp's own downloader (createModelDownloader:
// hf: URIs, URLs, split GGUFs, parallel connections, resumable temp files). svc adds what a
// server needs around it: one download per source however many callers pull it, a staging dir
// so a failed, cancelled or half-written download never replaces the file being served, a free
// disk check, verification (size, and the hub's SHA-256) before the files move into place, and a
// record of what was pulled from where.
import { createHash } from "node:crypto";
import { mkdir, readdir, rename, rm, stat, statfs } from "node:fs/promises";
import path from "node:path";
import { SvcError } from "../../errors";
import { PullJob, type PullResult } from "./job";
import { completeRecord, PARTIAL_DIR, writeRecord, type DownloadRecord } from "./records";
import { parseSource } from "./source";
import { hubFileUrls } from "./hub-urls";
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

export class ModelDownloads {
  private readonly jobs = new Map<string, PullJob>();
  private readonly failures = new Map<string, { at: number; error: Error }>();

  constructor(
    readonly modelsDir: string,
    private readonly log: (msg: string) => void = () => {},
  ) {}

  private key(source: string, o: PullOptions): string {
    return `${parseSource(source).uri}\0${o.fileName ?? ""}`;
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
    const have = await completeRecord(this.modelsDir, info.uri, fileName);
    if (have && !o.refresh && (!o.sha256 || have.files[0]?.sha256 === o.sha256.toLowerCase())) return { record: have, downloaded: false };
    const staging = path.join(this.modelsDir, PARTIAL_DIR, createHash("sha256").update(`${info.uri}\0${fileName ?? ""}`).digest("hex").slice(0, 16));
    await mkdir(staging, { recursive: true });
    const endpoint = o.endpoint ?? process.env.SVC_HF_ENDPOINT;
    // the hub's word on every file first: a missing or unreachable file fails at once with its
    // reason (the downloader would retry it for minutes), and the disk is checked before the
    // downloader sizes its work
    const signal = job.abort.signal;
    const urls = await hubFileUrls(info.uri, { endpoint, token: o.token, signal });
    const metas = await Promise.all(urls.map((u) => hubFileMeta(u, this.authHeaders(o), signal)));
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
      await rm(staging, { recursive: true, force: true });
      return { record: have, downloaded: false };
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

  private authHeaders(o: PullOptions): Record<string, string> {
    return o.token ? { authorization: `Bearer ${o.token}` } : {};
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
      const expectedSize = meta.sizeBytes ?? f.totalSize;
      if (size !== f.totalSize || size !== expectedSize) throw await refuse(`has ${size} bytes, the hub lists ${expectedSize}`);
      const sha256 = await sha256File(f.filePath);
      const want = [meta.sha256, i === 0 ? o.sha256?.toLowerCase() : undefined].filter((x): x is string => !!x);
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

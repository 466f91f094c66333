// A Model with spec.source: the file comes from a download (engines/inference/download). This
// decides, level-triggered, between "the verified file is here" (serve it), "downloading" (status
// shows bytes, total and rate; not Ready) and "failed" (say why; a previous file keeps serving).
import { existsSync } from "node:fs";
import path from "node:path";
import type { Svc } from "../../engines/svc";
import type { ReadyCondition, ReconcileResult } from "../types";
import type { ModelSpec } from "../../schemas/kinds/model";
import { downloadsOf, completeRecord, parseSource, RETRY_AFTER_MS, type PullOptions, type PullProgress } from "../../engines/inference/download";
import { describeMissing, resolveSecretRef } from "../../engines/secrets/refs";
import { resolveModelFile } from "../../engines/paths";

/** The downloads engine of this svc, created on first need. */
export const modelDownloads = (svc: Svc) => downloadsOf(svc);

/** How often status is rewritten while a download runs. */
const PROGRESS_MS = 1000;

export type SourceOutcome = { file: string; note?: string; sha256?: string } | (ReadyCondition & ReconcileResult);

export function progressStatus(p: PullProgress): Record<string, unknown> {
  return {
    phase: p.phase,
    completedBytes: p.completed,
    totalBytes: p.total,
    bytesPerSecond: p.rate,
    percent: p.total > 0 ? Math.floor((p.completed / p.total) * 1000) / 10 : 0,
    files: p.files,
  };
}

const mb = (n: number) => `${(n / 1048576).toFixed(1)} MB`;

export async function sourcedFile(svc: Svc, name: string, spec: ModelSpec & { source: string }): Promise<SourceOutcome> {
  let uri: string;
  try {
    uri = parseSource(spec.source).uri;
  } catch (e) {
    return { status: "False", reason: "InvalidSource", message: (e as Error).message };
  }
  const tokenRef = spec.download?.token;
  const token = resolveSecretRef(tokenRef);
  if (tokenRef && token === undefined) return { status: "False", reason: "SecretMissing", message: `download.token: ${describeMissing(tokenRef)}`, requeueAfterMs: 15_000 };
  const opts: PullOptions = {
    ...(spec.file ? { fileName: path.basename(spec.file) } : {}),
    ...(spec.download?.endpoint ? { endpoint: spec.download.endpoint } : {}),
    ...(token ? { token } : {}),
    ...(spec.download?.sha256 ? { sha256: spec.download.sha256 } : {}),
  };
  const rec = await completeRecord(svc.modelsDir, uri, opts.fileName);
  const wanted = opts.sha256?.toLowerCase();
  if (rec && (!wanted || rec.files[0]?.sha256 === wanted)) return { file: rec.file, sha256: rec.files[0]?.sha256 };
  const dl = modelDownloads(svc);
  // a file already there (an earlier download, or one written by hand) keeps serving meanwhile
  const previous = spec.file && existsSync(resolveModelFile(svc, spec.file)) ? spec.file : undefined;
  let job = dl.active(uri, opts);
  if (!job) {
    const failed = dl.recentFailure(uri, opts);
    if (failed) {
      if (previous) return { file: previous, note: `${failed.message}; serving the previous file` };
      return { status: "False", reason: "DownloadFailed", message: failed.message, requeueAfterMs: RETRY_AFTER_MS };
    }
    job = dl.pull(uri, opts);
    // the outcome reconciles at once, not at the next progress tick
    void job.done.catch(() => undefined).finally(() => svc.control?.enqueue({ kind: "Model", name }));
  }
  const p = job.progress;
  const pct = p.total > 0 ? ` ${Math.floor((p.completed / p.total) * 100)}% (${mb(p.completed)} of ${mb(p.total)}, ${mb(p.rate)}/s)` : "";
  return {
    status: "False",
    reason: "Downloading",
    message: `${p.phase} ${uri}${pct}${previous ? "; the previous file serves meanwhile" : ""}`,
    extra: { source: uri, download: progressStatus(p), loaded: false },
    requeueAfterMs: PROGRESS_MS,
  };
}

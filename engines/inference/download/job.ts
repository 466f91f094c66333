// One download of one source: its progress (what the Model's status, `svc models pull` and
// Ollama's /api/pull show) and its outcome. Every caller pulling the same source shares it.
import type { DownloadRecord } from "./records";

/** Ollama's /api/pull statuses, in order; svc's status and CLI use the same words. */
export type PullPhase = "pulling manifest" | "downloading" | "verifying sha256 digest" | "writing manifest" | "success";

export interface PullProgress {
  phase: PullPhase;
  source: string;
  /** bytes of every file of the model (0 until the hub answered) */
  total: number;
  /** bytes on disk so far (a resumed download starts above 0) */
  completed: number;
  /** bytes per second, averaged by the downloader */
  rate: number;
  files: number;
  /** sha256:<hex> of the entry file once verified */
  digest?: string;
}

export interface PullResult {
  record: DownloadRecord;
  /** false when the files on disk already matched the hub */
  downloaded: boolean;
}

type Listener = (p: PullProgress) => void;

/** Progress between phase changes is passed on at most this often. */
const NOTIFY_MS = 100;

export class PullJob {
  progress: PullProgress;
  error?: Error;
  result?: PullResult;
  readonly abort = new AbortController();
  readonly done: Promise<PullResult>;
  private readonly listeners = new Set<Listener>();
  private lastNotify = 0;
  private trailing?: ReturnType<typeof setTimeout>;

  constructor(source: string, run: (job: PullJob) => Promise<PullResult>) {
    this.progress = { phase: "pulling manifest", source, total: 0, completed: 0, rate: 0, files: 0 };
    this.done = run(this).then(
      (r) => {
        this.result = r;
        this.update({ phase: "success" });
        return r;
      },
      (e: Error) => {
        this.error = e;
        this.flush();
        throw e;
      },
    );
    this.done.catch(() => undefined); // a job nobody awaits must not be an unhandled rejection
  }

  get finished(): boolean {
    return this.result !== undefined || this.error !== undefined;
  }

  /** Listen to progress; returns the unsubscribe function. */
  on(l: Listener): () => void {
    this.listeners.add(l);
    l(this.progress);
    return () => this.listeners.delete(l);
  }

  /** New progress; listeners hear it at once on a phase change or with `now`, else throttled. */
  update(p: Partial<PullProgress>, now = false): void {
    const phaseChanged = p.phase !== undefined && p.phase !== this.progress.phase;
    this.progress = { ...this.progress, ...p };
    const t = Date.now();
    if (now || phaseChanged || t - this.lastNotify >= NOTIFY_MS) this.flush(t);
    else if (!this.trailing) {
      // a stalled transfer still shows where it stopped
      this.trailing = setTimeout(() => this.flush(), NOTIFY_MS - (t - this.lastNotify));
      this.trailing.unref?.();
    }
  }

  private flush(now = Date.now()): void {
    if (this.trailing) clearTimeout(this.trailing);
    this.trailing = undefined;
    this.lastNotify = now;
    for (const l of this.listeners) l(this.progress);
  }
}

// Model downloads (Model spec.source, `svc models pull`, Ollama's /api/pull).
export { ModelDownloads, downloadsOf, RETRY_AFTER_MS, type PullOptions } from "./downloads";
export { PullJob, type PullPhase, type PullProgress, type PullResult } from "./job";
export { readRecords, removeRecord, completeRecord, RECORDS_DIR, PARTIAL_DIR, type DownloadRecord } from "./records";
export { parseSource, quantOf, type SourceInfo } from "./source";
export { removeModelFiles } from "./remove";

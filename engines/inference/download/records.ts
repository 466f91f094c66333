// What svc downloaded: one small JSON record per pulled model in <modelsDir>/.svc-downloads, written
// only after every file is complete and verified and moved into place. The Model controller reads
// it to know a file is whole without hashing it again; `svc models list` shows its source.
import { mkdir, readdir, readFile, rename, rm, stat, writeFile } from "node:fs/promises";
import path from "node:path";

export interface DownloadRecord {
  source: string;
  /** the entry file (first part of a split GGUF), relative to the models dir */
  file: string;
  files: Array<{ name: string; sizeBytes: number; sha256: string; hubSha256?: string }>;
  sizeBytes: number;
  quant?: string;
  pulledAt: string;
}

export const RECORDS_DIR = ".svc-downloads";
export const PARTIAL_DIR = ".svc-partial";

const recordPath = (modelsDir: string, file: string) => path.join(modelsDir, RECORDS_DIR, `${file}.json`);

export async function readRecords(modelsDir: string): Promise<DownloadRecord[]> {
  const dir = path.join(modelsDir, RECORDS_DIR);
  const names = await readdir(dir).catch(() => [] as string[]);
  const out: DownloadRecord[] = [];
  for (const n of names.filter((x) => x.endsWith(".json"))) {
    try {
      out.push(JSON.parse(await readFile(path.join(dir, n), "utf8")) as DownloadRecord);
    } catch {
      /* a damaged record is as good as none: the model downloads again */
    }
  }
  return out;
}

export async function writeRecord(modelsDir: string, rec: DownloadRecord): Promise<void> {
  const p = recordPath(modelsDir, rec.file);
  await mkdir(path.dirname(p), { recursive: true });
  await writeFile(`${p}.tmp`, JSON.stringify(rec, null, 2));
  await rename(`${p}.tmp`, p);
}

export async function removeRecord(modelsDir: string, file: string): Promise<void> {
  await rm(recordPath(modelsDir, file), { force: true });
}

/** The record of a source whose files are all on disk at their recorded sizes. */
export async function completeRecord(modelsDir: string, source: string, file?: string): Promise<DownloadRecord | undefined> {
  for (const r of await readRecords(modelsDir)) {
    if (r.source !== source || (file && r.file !== file)) continue;
    const whole = await Promise.all(r.files.map((f) => stat(path.join(modelsDir, f.name)).then((s) => s.size === f.sizeBytes, () => false)));
    if (whole.every(Boolean)) return r;
  }
  return undefined;
}

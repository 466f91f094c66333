// Deleting weights: only on an explicit ask (`svc models rm`, Ollama's /api/delete), never when
// a Model is removed. Every part of a split GGUF goes, with svc's record of the download.
import { rm } from "node:fs/promises";
import path from "node:path";
import { readRecords, removeRecord } from "./records";

/** Remove a model file (named as in the models dir) and, when svc downloaded it, its other parts
 * and its record. Returns the files removed. */
export async function removeModelFiles(modelsDir: string, file: string): Promise<string[]> {
  const base = path.basename(file);
  const rec = (await readRecords(modelsDir)).find((r) => r.file === base || r.files.some((f) => f.name === base));
  const names = rec ? rec.files.map((f) => f.name) : [base];
  for (const n of names) await rm(path.join(modelsDir, n), { force: true });
  if (rec) await removeRecord(modelsDir, rec.file);
  return names;
}

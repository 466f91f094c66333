// A real SQLite store in a temp dir (under SVC_TEST_ROOT when set), and manifest snippets.
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { openDb } from "../../prisma/client";
import { ResourceStore } from "../../prisma/resource-store";

export interface TempStore {
  store: ResourceStore;
  dir: string;
  close(): Promise<void>;
}

export function tempDir(prefix = "svc-manifests-"): string {
  const base = process.env.SVC_TEST_ROOT ?? os.tmpdir();
  fs.mkdirSync(base, { recursive: true });
  return fs.mkdtempSync(path.join(base, prefix));
}

export async function tempStore(): Promise<TempStore> {
  const dir = tempDir();
  const db = await openDb(path.join(dir, "svc.db"));
  const store = await ResourceStore.open(db.prisma, db.repos.resources);
  return {
    store,
    dir,
    async close() {
      await store.close();
      await db.close();
      fs.rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** One manifest document. */
export function doc(kind: string, name: string, spec: string, labels?: Record<string, string>): string {
  const lab = labels ? `\n  labels: ${JSON.stringify(labels)}` : "";
  const body = spec.trim() === "" ? " {}" : "\n" + spec.replace(/^/gm, "  ").replace(/^\s+$/gm, "");
  return `apiVersion: svc/v1\nkind: ${kind}\nmetadata:\n  name: ${name}${lab}\nspec:${body}\n`;
}

export const HASH = "sha256:" + "ab".repeat(32);

// `svc models pull <uri>`: download a model into the models dir with the same engine the Model
// controller uses (node-llama-cpp's downloader, verified, resumable); a progress bar on a
// terminal, plain progress lines otherwise. `svc models rm <file>`: delete weights (the one way
// svc deletes them). Model usage for `svc models list` comes from the store.
import type { Command } from "commander";
import path from "node:path";
import { CliError } from "./errors";
import { formatBytes } from "./format-bytes";
import { resolveHome, resolveModelsDir, serverInfoFile, storeFile } from "../engines/paths";
import { readFile } from "node:fs/promises";
import { request } from "./http";
import { ModelDownloads, removeModelFiles, type PullProgress } from "../engines/inference/download";
import { resolveSecretRef } from "../engines/secrets/refs";
import { existsSync } from "node:fs";

interface PullOpts {
  dir?: string;
  home?: string;
  endpoint?: string;
  token?: string;
  sha256?: string;
  name?: string;
}

const dirOf = (o: { dir?: string; home?: string }) => (o.dir ? path.resolve(o.dir) : resolveModelsDir(resolveHome(o.home)));

const BAR = 30;

/** One line of progress: a bar on a terminal, words otherwise. */
export function progressLine(p: PullProgress, tty: boolean): string {
  if (p.phase !== "downloading" || p.total <= 0) return p.phase;
  const frac = Math.min(1, p.completed / p.total);
  const pct = `${Math.floor(frac * 100)}%`.padStart(4);
  const amounts = `${formatBytes(p.completed)} / ${formatBytes(p.total)}${p.rate > 0 ? `, ${formatBytes(p.rate)}/s` : ""}`;
  if (!tty) return `downloading ${pct} (${amounts})`;
  const full = Math.round(frac * BAR);
  return `downloading [${"#".repeat(full)}${"-".repeat(BAR - full)}] ${pct} ${amounts}`;
}

export async function pullCommand(uri: string, o: PullOpts): Promise<void> {
  const dir = dirOf(o);
  const token = o.token ? resolveSecretRef(o.token) : undefined;
  if (o.token && !token) throw new CliError(`--token ${o.token}: not set or empty (pass a reference: env:NAME or file:/path)`);
  const downloads = new ModelDownloads(dir);
  const tty = !!process.stderr.isTTY;
  let lastPlain = "";
  let lastPct = -10;
  let onBar = false;
  const job = downloads.pull(uri, {
    refresh: true,
    ...(o.name ? { fileName: o.name.endsWith(".gguf") ? o.name : `${o.name}.gguf` } : {}),
    ...(o.endpoint ? { endpoint: o.endpoint } : {}),
    ...(token ? { token } : {}),
    ...(o.sha256 ? { sha256: o.sha256 } : {}),
    // says why the pull does not move while a running svc (or another pull) downloads the source
    onWait: (msg) => process.stderr.write(`${onBar ? "\n" : ""}${msg}\n`),
  });
  const off = job.on((p) => {
    const line = progressLine(p, tty);
    if (tty) {
      if (p.phase === "downloading") {
        process.stderr.write(`\r${line}\x1b[K`);
        onBar = true;
        return;
      }
      if (onBar) process.stderr.write("\n");
      onBar = false;
      process.stderr.write(`${line}\n`);
      return;
    }
    // plain: each phase once, and downloading every 10%
    const pct = p.total > 0 ? Math.floor((p.completed / p.total) * 100) : 0;
    if (p.phase === "downloading" && pct < lastPct + 10 && pct < 100) return;
    if (line === lastPlain) return;
    if (p.phase === "downloading") lastPct = pct;
    lastPlain = line;
    process.stderr.write(`${line}\n`);
  });
  try {
    const { record, downloaded } = await job.done;
    if (onBar) process.stderr.write("\n");
    const file = path.join(dir, record.file);
    process.stdout.write(`${downloaded ? "pulled" : "up to date:"} ${file} (${formatBytes(record.sizeBytes)}, sha256 ${record.files[0]?.sha256})\n`);
    process.stdout.write(
      `serve it with a Model manifest:\n  apiVersion: svc/v1\n  kind: Model\n  metadata: {name: ${path.basename(record.file, ".gguf").toLowerCase().replace(/[^a-z0-9._-]+/g, "-")}}\n  spec: {source: "${record.source}", threads: 4}\n`,
    );
  } catch (e) {
    if (onBar) process.stderr.write("\n");
    throw new CliError((e as Error).message);
  } finally {
    off();
  }
}

/** Model names using each file (by file name), from the running server, else the store;
 * undefined when neither can be read. */
export async function modelUsers(home: string, dir: string): Promise<Map<string, string[]> | undefined> {
  const users = new Map<string, string[]>();
  const add = (name: string, file: unknown) => {
    if (typeof file !== "string") return;
    const base = path.basename(path.resolve(dir, file));
    users.set(base, [...(users.get(base) ?? []), name]);
  };
  try {
    if (existsSync(serverInfoFile(home))) {
      const info = JSON.parse(await readFile(serverInfoFile(home), "utf8")) as { url: string };
      const r = await request(`${info.url}/admin/config/status`, { timeoutMs: 3000 });
      const objects = (JSON.parse(r.text) as { objects: Array<{ kind: string; name: string; spec?: { file?: string } }> }).objects;
      for (const o of objects) if (o.kind === "Model") add(o.name, o.spec?.file);
      return users;
    }
    if (!existsSync(storeFile(home)) && !process.env.SVC_DATABASE_URL) return users;
    const { withOfflineStore } = await import("./offline");
    return await withOfflineStore(home, async (store) => {
      for (const m of store.list({ kind: "Model" })) add(m.name, m.spec?.file);
      return users;
    });
  } catch {
    return undefined; // the column says "?"
  }
}

export function registerPullAndRm(models: Command): void {
  models
    .command("pull <uri>")
    .description("download a model into the models dir: hf:<user>/<repo>:<quant>, hf:<user>/<repo>/<file>.gguf#<branch>, or an https:// URL (resumes, verifies size and SHA-256)")
    .option("--dir <dir>", "models dir (default: SVC_MODELS_DIR, else <home>/models)")
    .option("--home <dir>", "svc data dir (default: SVC_HOME or ~/.svc)")
    .option("--endpoint <url>", "Hugging Face endpoint (a mirror; default SVC_HF_ENDPOINT, HF_ENDPOINT, else https://huggingface.co)")
    .option("--token <ref>", "access token for gated repositories, by reference: env:HF_TOKEN or file:/path")
    .option("--sha256 <hex>", "expected SHA-256 of the (first) file")
    .option("--name <file>", "save as this file name")
    .action(async (uri: string, o: PullOpts) => pullCommand(uri, o));

  models
    .command("rm <file>")
    .description("delete a model file from the models dir (every part of a split GGUF svc downloaded); Models using it stop being Ready")
    .option("--dir <dir>", "models dir (default: SVC_MODELS_DIR, else <home>/models)")
    .option("--home <dir>", "svc data dir (default: SVC_HOME or ~/.svc)")
    .action(async (file: string, o: { dir?: string; home?: string }) => {
      const dir = dirOf(o);
      if (file.includes("/") || file.includes("\\")) throw new CliError(`give a file name in the models dir (${dir}), not a path: ${file}`);
      if (!existsSync(path.join(dir, file))) throw new CliError(`no file ${file} in ${dir}; see \`svc models list\``);
      const removed = await removeModelFiles(dir, file);
      process.stdout.write(`removed ${removed.join(", ")} from ${dir}\n`);
    });
}

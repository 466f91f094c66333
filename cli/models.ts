// `svc models create-tiny` writes svc's generated GGUF (deterministic weights, no download) into
// the models dir; `svc models list` shows the GGUF files there. Models dir: --dir, else
// SVC_MODELS_DIR, else <home>/models.
import type { Command } from "commander";
import { existsSync } from "node:fs";
import { mkdir, open, readdir, rename, rm, stat } from "node:fs/promises";
import path from "node:path";
import { CliError } from "./errors";
import { formatBytes } from "./format-bytes";
import { modelUsers, registerPullAndRm } from "./models-pull";
import { quantOf, readRecords } from "../engines/inference/download";

export { formatBytes };
import { displayWidth, outputFormat, padEndCols, printData, withOutputOption } from "./print";
import { resolveHome, resolveModelsDir } from "../engines/paths";
import { TINY_MODEL_SHAPES, writeTinyGguf, type TinyModelSize } from "../engines/inference/gguf";
import { buildVocab } from "../engines/inference/gguf/vocab";

const SIZES = Object.keys(TINY_MODEL_SHAPES) as TinyModelSize[];

function modelsDirOf(opts: { dir?: string; home?: string }): string {
  return opts.dir ? path.resolve(opts.dir) : resolveModelsDir(resolveHome(opts.home));
}

/** Tensor bytes of a generated model (all F32), to show progress against. */
export function estimateBytes(size: TinyModelSize): number {
  const s = TINY_MODEL_SHAPES[size];
  const V = buildVocab().tokens.length;
  const E = s.embd;
  const kv = (E / s.heads) * s.headsKv;
  const perBlock = 2 * E + 2 * E * E + 2 * E * kv + 3 * E * s.ff;
  return 4 * (2 * V * E + E + s.blocks * perBlock);
}

function fileNameFor(size: TinyModelSize, name?: string): string {
  if (!name) return `svc-${size}.gguf`;
  if (name.includes("/") || name.includes("\\")) throw new CliError(`--name must be a file name, not a path (use --dir for the folder): ${name}`);
  return name.endsWith(".gguf") ? name : `${name}.gguf`;
}

async function isGguf(file: string): Promise<boolean> {
  const fh = await open(file, "r").catch(() => null);
  if (!fh) return false;
  try {
    const b = Buffer.alloc(4);
    const { bytesRead } = await fh.read(b, 0, 4, 0);
    return bytesRead === 4 && b.toString("ascii") === "GGUF";
  } finally {
    await fh.close();
  }
}

export interface CreateTinyOptions {
  size?: string;
  dir?: string;
  name?: string;
  force?: boolean;
  home?: string;
  /** progress lines go here (default stderr) */
  progress?: (line: string, final: boolean) => void;
}

export async function createTiny(opts: CreateTinyOptions): Promise<{ file: string; bytes: number; created: boolean }> {
  const size = (opts.size ?? "tiny") as TinyModelSize;
  if (!SIZES.includes(size)) throw new CliError(`--size must be one of ${SIZES.join(", ")}, got ${opts.size}`);
  const dir = modelsDirOf(opts);
  const file = path.join(dir, fileNameFor(size, opts.name));
  if (existsSync(file) && !opts.force) {
    return { file, bytes: (await stat(file)).size, created: false };
  }
  await mkdir(dir, { recursive: true });
  const tmp = `${file}.${process.pid}.tmp`;
  const total = estimateBytes(size);
  const report = opts.progress;
  // the bigger sizes take a while: show how far the write got
  const timer =
    report && size !== "tiny"
      ? setInterval(() => {
          stat(tmp)
            .then((st) => report(`writing ${path.basename(file)}: ${Math.min(99, Math.floor((st.size / total) * 100))}% (${formatBytes(st.size)} of about ${formatBytes(total)})`, false))
            .catch(() => undefined);
        }, 250)
      : undefined;
  try {
    const { bytes } = await writeTinyGguf(tmp, size);
    await rename(tmp, file);
    if (timer) report?.(`writing ${path.basename(file)}: 100% (${formatBytes(bytes)})`, true);
    return { file, bytes, created: true };
  } catch (e) {
    await rm(tmp, { force: true });
    throw e;
  } finally {
    if (timer) clearInterval(timer);
  }
}

export interface ModelFileRow {
  name: string;
  file: string;
  sizeBytes: number;
  modifiedAt: string;
  gguf: boolean;
  /** where svc downloaded it from (svc models pull, a Model's source) */
  source?: string;
  quant?: string;
  /** Models whose file this is (undefined: the store could not be read) */
  usedBy?: string[];
}

export async function listModelFiles(dir: string): Promise<ModelFileRow[]> {
  const entries = await readdir(dir, { withFileTypes: true }).catch((e: any) => {
    if (e?.code === "ENOENT") return [];
    throw new CliError(`cannot read models dir ${dir}: ${e?.code ?? e?.message ?? e}`);
  });
  const rows: ModelFileRow[] = [];
  const records = await readRecords(dir);
  for (const e of entries) {
    if (!e.isFile() || !e.name.endsWith(".gguf")) continue;
    const file = path.join(dir, e.name);
    const st = await stat(file);
    const rec = records.find((r) => r.files.some((f) => f.name === e.name));
    const quant = rec?.quant ?? quantOf(e.name);
    rows.push({ name: e.name, file, sizeBytes: st.size, modifiedAt: st.mtime.toISOString(), gguf: await isGguf(file), ...(rec ? { source: rec.source } : {}), ...(quant ? { quant } : {}) });
  }
  return rows.sort((a, b) => a.name.localeCompare(b.name));
}

export function registerModels(program: Command): void {
  const models = program.command("models").description("local GGUF models: pull from Hugging Face or a URL, generate the default model, list and remove files in the models dir");
  registerPullAndRm(models);

  models
    .command("create-tiny")
    .description("write svc's generated GGUF model (deterministic, no download) into the models dir")
    .option("--size <size>", `model size: ${SIZES.join(" | ")}`, "tiny")
    .option("--dir <dir>", "models dir (default: SVC_MODELS_DIR, else <home>/models)")
    .option("--name <name>", "file name (default: svc-<size>.gguf)")
    .option("--force", "overwrite an existing file")
    .option("--home <dir>", "svc data dir (default: SVC_HOME or ~/.svc)")
    .action(async (o: CreateTinyOptions) => {
      const tty = process.stderr.isTTY;
      const r = await createTiny({
        ...o,
        progress: (line, final) => {
          if (tty) process.stderr.write(`\r${line}\x1b[K${final ? "\n" : ""}`);
          else if (final) process.stderr.write(line + "\n");
        },
      });
      if (!r.created) {
        process.stdout.write(`${r.file} already exists (${formatBytes(r.bytes)}); pass --force to write it again\n`);
        return;
      }
      process.stdout.write(`wrote ${r.file} (${formatBytes(r.bytes)})\n`);
      const name = path.basename(r.file, ".gguf");
      process.stdout.write(
        `serve it with a Model manifest:\n  apiVersion: svc/v1\n  kind: Model\n  metadata: {name: ${name}}\n  spec: {file: ${path.basename(r.file)}, threads: 1}\n`,
      );
    });

  const list = models
    .command("list")
    .description("list the GGUF files in the models dir")
    .option("--dir <dir>", "models dir (default: SVC_MODELS_DIR, else <home>/models)")
    .option("--home <dir>", "svc data dir (default: SVC_HOME or ~/.svc)");
  withOutputOption(list)
    .action(async (o: { dir?: string; home?: string; json?: boolean; output?: string }) => {
      const format = outputFormat(o);
      const dir = modelsDirOf(o);
      const rows = await listModelFiles(dir);
      if (await printData(format, { modelsDir: dir, models: rows })) return;
      if (rows.length === 0) {
        process.stdout.write(`no GGUF files in ${dir}; run \`svc models create-tiny\` to generate one\n`);
        return;
      }
      process.stdout.write(`models dir: ${dir}\n`);
      // widths in terminal columns: a file or Model name in CJK or with an emoji is wider than its .length
      const w = Math.max(4, ...rows.map((r) => displayWidth(r.name)));
      const wide = format === "wide";
      const users = await modelUsers(resolveHome(o.home), dir);
      const used = (r: ModelFileRow) => (users ? (users.get(r.name) ?? []).join(",") || "-" : "?");
      const wq = Math.max(5, ...rows.map((r) => displayWidth(r.quant ?? "-")));
      const wu = Math.max(7, ...rows.map((r) => displayWidth(used(r))));
      process.stdout.write(`${"NAME".padEnd(w)}  ${"SIZE".padStart(9)}  MODIFIED             ${"QUANT".padEnd(wq)}  ${"USED BY".padEnd(wu)}  SOURCE${wide ? "  PATH" : ""}\n`);
      for (const r of rows) {
        const where = wide ? `  ${path.join(dir, r.name)}` : "";
        process.stdout.write(
          `${padEndCols(r.name, w)}  ${formatBytes(r.sizeBytes).padStart(9)}  ${r.modifiedAt.slice(0, 19).replace("T", " ")}  ${padEndCols(r.quant ?? "-", wq)}  ${padEndCols(used(r), wu)}  ${r.source ?? "-"}${where}${r.gguf ? "" : "  (not a GGUF file)"}\n`,
        );
      }
    });
}

// The model pool: Model manifests registered by the controller, loaded on first use, served
// through leased sequences, unloaded when idle. api/ and agents call chat/embed/info/stats.
import { existsSync, statSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import type { Llama } from "node-llama-cpp";
import type { ChatEvent, ChatRequest, EmbeddingRequest, EmbeddingResult } from "../chat/types";
import type { ModelSpec } from "../../schemas/kinds/model";
import { inferenceError } from "./errors";
import { gpuChoice, startLlama } from "./gpu";
import type { ModelInfo } from "./info";
import type { GrammarCache } from "./json-schema";
import type { Lease, LoadedModel } from "./loaded-model";
import { resolveSampling } from "./sampling";
import { whileLoading } from "../young-gen";
import type { Sampling } from "../../schemas/common";

// node-llama-cpp and the code on top of it load with the first model, not with the pool
type Runtime = typeof import("./runtime");
let loadedRuntime: Runtime | undefined;
const runtime = async (): Promise<Runtime> => (loadedRuntime ??= await whileLoading(() => import("./runtime")));

export interface ModelPoolOptions {
  modelsDir: string;
  /** threads when a spec leaves them out (the Model schema defaults to 1) */
  defaultThreads?: number;
  log?: (msg: string) => void;
  /** requests allowed to wait per model when every sequence is busy (default 64) */
  maxQueue?: number;
  /** share one node-llama-cpp instance (tests, benchmarks); the pool then never disposes it */
  llama?: Llama | Promise<Llama>;
  /** bytes of free memory; default os.freemem */
  freeMemory?: () => number;
  /** free memory needed per byte of model file before loading (default 1.2) */
  memoryFactor?: number;
  /** the Server manifest's generation settings, read on every request (between model and built-in) */
  serverSampling?: () => Sampling | undefined;
}

export interface ModelListing {
  name: string;
  spec: ModelSpec;
  loaded: boolean;
  file: string;
  /** undefined when the file is missing */
  sizeBytes?: number;
}

export interface LoadedModelStats {
  name: string;
  loadedAt: string;
  activeLeases: number;
  queued: number;
  sequences: number;
  idleUnloadAt?: string;
  promptTokensReused: number;
  promptTokensEvaluated: number;
  generations: number;
}

export interface PoolStats {
  models: LoadedModelStats[];
  totals: { loaded: number; activeLeases: number; queued: number; generations: number; promptTokensReused: number; promptTokensEvaluated: number };
}

interface Entry {
  name: string;
  spec: ModelSpec;
  file: string;
  key: string;
  loaded?: LoadedModel;
  loading?: Promise<LoadedModel>;
  /** the file's identity when it was last loaded (fileStamp) */
  stamp?: string;
}

/** which file is at a path: replaced (renamed over, rewritten) means another inode, size or mtime */
const fileStamp = (file: string): string | undefined => {
  try {
    const st = statSync(file);
    return `${st.dev}:${st.ino}:${st.size}:${st.mtimeMs}`;
  } catch {
    return undefined;
  }
};

/** stable form of a spec: a re-register with an equal spec keeps the loaded model */
const specKey = (v: unknown): string =>
  JSON.stringify(v, (_k, x) => (x && typeof x === "object" && !Array.isArray(x) ? Object.fromEntries(Object.entries(x).sort()) : x));

export class ModelPool {
  private readonly entries = new Map<string, Entry>();
  private llama?: Promise<Llama>;
  private grammars?: GrammarCache;
  private closed = false;
  private readonly log: (msg: string) => void;

  constructor(private readonly opts: ModelPoolOptions) {
    this.log = opts.log ?? (() => {});
    if (opts.llama) this.llama = Promise.resolve(opts.llama);
  }

  register(name: string, spec: ModelSpec): void {
    const key = specKey(spec);
    const prev = this.entries.get(name);
    if (prev?.key === key) {
      // Same spec, but the file at its path was replaced (a finished re-download, a file written
      // by hand): the controller's reconcile (and resync) lands here, and the old weights stayed
      // loaded, served under a status and /api/show describing the new file. Reload on next use.
      if (prev.loaded && !prev.loaded.disposed && prev.stamp !== fileStamp(prev.file)) this.detach(prev);
      return;
    }
    if (prev) this.detach(prev); // changed spec: the next request loads the new one
    this.entries.set(name, { name, spec, key, file: path.resolve(this.opts.modelsDir, spec.file) });
  }

  /** Forgets the model and unloads it once in-flight requests end. Never deletes the file. */
  unregister(name: string): void {
    const e = this.entries.get(name);
    if (!e) return;
    this.detach(e);
    this.entries.delete(name);
  }

  has(name: string): boolean {
    return this.find(name) !== undefined;
  }

  /** Registered and its file is on disk (what model listings show). */
  servable(name: string): boolean {
    const e = this.find(name);
    return e !== undefined && existsSync(e.file);
  }

  /** The registered name a request's model name (or alias) refers to. */
  resolveName(name: string): string | undefined {
    return this.find(name)?.name;
  }

  list(): ModelListing[] {
    return [...this.entries.values()].map((e) => ({
      name: e.name,
      spec: e.spec,
      loaded: !!e.loaded && !e.loaded.disposed,
      file: e.file,
      sizeBytes: existsSync(e.file) ? statSync(e.file).size : undefined,
    }));
  }

  async *chat(req: ChatRequest, signal?: AbortSignal): AsyncGenerator<ChatEvent> {
    // A model may unload between load and lease (idle timer, re-register): retry once.
    for (let attempt = 0; ; attempt++) {
      // Looked up on every attempt: a changed manifest replaces the entry, and retrying on the old
      // one loaded the old spec again only to retire it at once (the request failed).
      const entry = this.entryFor(req.model);
      const sampling = resolveSampling(req, entry.spec, this.opts.serverSampling?.());
      const lm = await this.ensureLoaded(entry);
      const { prepare, generate } = await runtime();
      const prepared = await prepare(lm, req, await this.grammarCache(), sampling.maxTokens);
      let lease: Lease;
      try {
        lease = await lm.lease(prepared.tokens, signal);
      } catch (err) {
        if (lm.disposed && attempt === 0 && !signal?.aborted) continue;
        throw err;
      }
      try {
        yield* generate(lm, lease, prepared, sampling, signal);
      } finally {
        lease.release();
      }
      return;
    }
  }

  async embed(req: EmbeddingRequest): Promise<EmbeddingResult> {
    for (let attempt = 0; ; attempt++) {
      const entry = this.entryFor(req.model); // per attempt, as in chat: a changed manifest replaces the entry
      if (entry.spec.embeddings === false) throw inferenceError("invalid_request", `model ${entry.name} does not serve embeddings`);
      const lm = await this.ensureLoaded(entry);
      try {
        return await lm.embed(req.input);
      } catch (err) {
        if (lm.disposed && attempt === 0) continue;
        throw err;
      }
    }
  }

  async info(name: string): Promise<ModelInfo> {
    const e = this.entryFor(name);
    this.checkFile(e);
    return (await runtime()).readModelInfo(e.name, e.file, e.spec);
  }

  async countTokens(name: string, text: string): Promise<number> {
    const lm = await this.ensureLoaded(this.entryFor(name));
    return lm.model.tokenize(text).length;
  }

  /** Prompt tokens of a chat request as this model renders it (chat template, tools), with its
   * own tokenizer: what the answer would report as prompt tokens. Loads the model if needed. */
  async countChatTokens(req: ChatRequest): Promise<number> {
    const lm = await this.ensureLoaded(this.entryFor(req.model));
    return (await runtime()).promptTokenCount(lm, req, await this.grammarCache());
  }

  /** countChatTokens when the model is loaded now, else undefined: the gateway's limit check
   * counts with the model's tokenizer but never loads a model to do so. */
  loadedChatTokens(req: ChatRequest): Promise<number> | undefined {
    const lm = this.find(req.model)?.loaded;
    if (!lm || lm.disposed) return undefined;
    return this.grammarCache().then(async (g) => (await runtime()).promptTokenCount(lm, req, g));
  }

  /** Unload a model now (Ollama's keep_alive 0): in-flight generations finish first; the next
   * request loads it again. False when no such model is registered. */
  unload(name: string): boolean {
    const e = this.find(name);
    if (!e) return false;
    this.detach(e);
    return true;
  }

  stats(): PoolStats {
    const models: LoadedModelStats[] = [];
    for (const e of this.entries.values()) {
      const m = e.loaded;
      if (!m || m.disposed) continue;
      models.push({
        name: e.name,
        loadedAt: m.loadedAt.toISOString(),
        activeLeases: m.activeLeases,
        queued: m.queued,
        sequences: m.slots.length,
        idleUnloadAt: m.idleUnloadAt?.toISOString(),
        promptTokensReused: m.promptTokensReused,
        promptTokensEvaluated: m.promptTokensEvaluated,
        generations: m.generations,
      });
    }
    const sum = (k: "activeLeases" | "queued" | "generations" | "promptTokensReused" | "promptTokensEvaluated") => models.reduce((n, m) => n + m[k], 0);
    return {
      models,
      totals: {
        loaded: models.length,
        activeLeases: sum("activeLeases"),
        queued: sum("queued"),
        generations: sum("generations"),
        promptTokensReused: sum("promptTokensReused"),
        promptTokensEvaluated: sum("promptTokensEvaluated"),
      },
    };
  }

  async close(): Promise<void> {
    this.closed = true;
    const entries = [...this.entries.values()];
    this.entries.clear();
    await Promise.all(entries.map(async (e) => {
      const lm = e.loaded ?? (await e.loading?.catch(() => undefined));
      await lm?.dispose();
    }));
    if (this.llama && !this.opts.llama) await (await this.llama.catch(() => undefined))?.dispose();
  }

  private find(name: string): Entry | undefined {
    const direct = this.entries.get(name) ?? this.entries.get(name.replace(/:latest$/, ""));
    if (direct) return direct;
    for (const e of this.entries.values()) if (e.spec.aliases?.includes(name)) return e;
    return undefined;
  }

  private entryFor(name: string): Entry {
    if (this.closed) throw inferenceError("model_unavailable", "the model pool is closed");
    const e = this.find(name);
    if (!e) throw inferenceError("model_unavailable", `no local model named ${name}`);
    return e;
  }

  private detach(e: Entry) {
    const lm = e.loaded;
    e.loaded = undefined;
    lm?.retire();
    void e.loading?.then((m) => m.retire(), () => undefined);
  }

  private getLlama(): Promise<Llama> {
    // the backend: SVC_GPU (engines/inference/gpu.ts), else the CPU
    this.llama ??= runtime().then(({ getLlama, LlamaLogLevel }) =>
      startLlama((o) => getLlama({ ...o, logLevel: LlamaLogLevel.warn, logger: (level, message) => this.log(`llama.cpp ${level}: ${message.trimEnd()}`) }), gpuChoice(process.env.SVC_GPU), this.log),
    );
    return this.llama;
  }

  private async grammarCache(): Promise<GrammarCache> {
    const llama = await this.getLlama();
    return (this.grammars ??= new (await runtime()).GrammarCache(llama));
  }

  private checkFile(e: Entry) {
    if (!existsSync(e.file)) throw inferenceError("model_unavailable", `file not found for model ${e.name}: ${e.file}`);
  }

  private ensureLoaded(e: Entry): Promise<LoadedModel> {
    if (e.loaded && !e.loaded.disposed) return Promise.resolve(e.loaded);
    e.loading ??= this.load(e).then(
      (lm) => {
        e.loading = undefined;
        if (this.entries.get(e.name) === e && !this.closed) e.loaded = lm;
        else lm.retire(); // unregistered or replaced while loading
        return lm;
      },
      (err) => {
        e.loading = undefined;
        throw err;
      },
    );
    return e.loading;
  }

  private load(e: Entry): Promise<LoadedModel> {
    return whileLoading(() => this.loadNow(e)); // what a model load keeps is not a young generation's (engines/young-gen.ts)
  }

  private async loadNow(e: Entry): Promise<LoadedModel> {
    this.checkFile(e);
    const size = statSync(e.file).size;
    e.stamp = fileStamp(e.file);
    const need = size * (this.opts.memoryFactor ?? 1.2);
    const free = (this.opts.freeMemory ?? os.freemem)();
    if (need > free) {
      const mb = (n: number) => `${Math.round(n / 2 ** 20)} MB`;
      throw inferenceError("model_unavailable", `not enough memory to load model ${e.name}: needs about ${mb(need)}, ${mb(free)} free`);
    }
    // a first load (llama.cpp start-up included) can take seconds: say so before, not only after
    this.log(`loading model ${e.name} from ${e.file} (${Math.max(1, Math.round(size / 1e6))} MB)…`);
    const started = Date.now();
    const llama = await this.getLlama();
    const s = e.spec;
    try {
      const lm = await (await runtime()).LoadedModel.load(llama, {
        name: e.name,
        file: e.file,
        contextSize: s.contextSize ?? 2048,
        threads: s.threads ?? this.opts.defaultThreads ?? 1,
        parallel: s.parallel ?? 4,
        idleUnloadSeconds: s.idleUnloadSeconds ?? 300,
        maxQueue: this.opts.maxQueue ?? 64,
        onIdle: (m) => this.unloadIdle(m),
      });
      this.log(`model ${e.name} loaded from ${e.file} in ${Date.now() - started} ms (${lm.slots.length} sequences)`);
      return lm;
    } catch (err) {
      throw inferenceError("model_unavailable", `cannot load model ${e.name} from ${e.file}: ${(err as Error).message}`, { cause: err });
    }
  }

  private unloadIdle(m: LoadedModel) {
    for (const e of this.entries.values()) if (e.loaded === m) e.loaded = undefined;
    this.log(`model ${m.name} unloaded after ${m.settings.idleUnloadSeconds} s idle`);
    void m.dispose();
  }
}

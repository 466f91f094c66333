// One loaded GGUF: the model, one context whose sequences serve requests in parallel (one lease
// each), an embedding context made on first use, counters, and the idle-unload timer.
import {
  type ChatWrapper, type Llama, LlamaChat, LlamaCompletion, type LlamaContext, type LlamaContextSequence,
  type LlamaEmbeddingContext, type LlamaModel, resolveChatWrapper, type Token, type Tokenizer,
} from "node-llama-cpp";
import { inferenceError } from "./errors";
import { SlotQueue } from "./slots";
import { StaleTrim } from "./stale-trim";
import { StepBatching } from "./step-batching";
import { templateTokenizer } from "./template-tokens";

export interface Slot {
  index: number;
  sequence: LlamaContextSequence;
  chat: LlamaChat;
  completion?: LlamaCompletion;
}

export interface Lease {
  slot: Slot;
  /** aborted when the model is disposed under the lease (pool closed) */
  signal: AbortSignal;
  release(): void;
}

export interface LoadSettings {
  name: string;
  file: string;
  contextSize: number;
  threads: number;
  parallel: number;
  idleUnloadSeconds: number;
  maxQueue: number;
  /** called when the idle interval passed with no lease */
  onIdle: (m: LoadedModel) => void;
}

export class LoadedModel {
  readonly loadedAt = new Date();
  readonly chatWrapper: ChatWrapper;
  readonly slots: Slot[];
  /** tokenizes rendered chat prompts, the template's fixed pieces kept (./template-tokens.ts) */
  readonly promptTokenizer: Tokenizer;
  private readonly queue: SlotQueue<Slot>;
  /** holds a decode step for a sequence one hop behind (./step-batching.ts) */
  readonly stepBatching: StepBatching;
  private embedding?: Promise<LlamaEmbeddingContext>;
  private embedChain: Promise<unknown> = Promise.resolve();
  private idleTimer?: NodeJS.Timeout;
  private readonly disposeController = new AbortController();
  private retired = false;
  disposed = false;

  /** cuts another prompt's cached tokens off a leased sequence without the context lock (./stale-trim.ts) */
  readonly staleTrim: StaleTrim;
  /** leases held or awaited, plus running embeddings: the model is idle at zero */
  private holds = 0;
  private embedsRunning = 0;
  generations = 0;
  promptTokensReused = 0;
  promptTokensEvaluated = 0;
  idleUnloadAt?: Date;

  private constructor(readonly model: LlamaModel, readonly context: LlamaContext, readonly settings: LoadSettings) {
    this.chatWrapper = resolveChatWrapper(model);
    this.promptTokenizer = templateTokenizer(model);
    this.staleTrim = new StaleTrim(context);
    this.stepBatching = new StepBatching(context, () => this.slots.length - this.queue.freeCount);
    this.slots = Array.from({ length: context.totalSequences }, (_, index) => {
      const sequence = context.getSequence();
      this.stepBatching.attach(sequence);
      return { index, sequence, chat: new LlamaChat({ contextSequence: sequence, chatWrapper: this.chatWrapper }) };
    });
    this.queue = new SlotQueue(this.slots, settings.maxQueue, (s, tokens) => s.sequence.compareContextTokens(tokens as Token[]).firstDifferentIndex);
    this.armIdleTimer();
  }

  static async load(llama: Llama, s: LoadSettings): Promise<LoadedModel> {
    const model = await llama.loadModel({ modelPath: s.file });
    try {
      const context = await model.createContext({ contextSize: s.contextSize, sequences: s.parallel, threads: s.threads });
      return new LoadedModel(model, context, s);
    } catch (err) {
      await model.dispose();
      throw err;
    }
  }

  get name(): string {
    return this.settings.name;
  }

  get queued(): number {
    return this.queue.queued;
  }

  /** sequences leased right now, plus running embedding calls */
  get activeLeases(): number {
    return this.slots.length - this.queue.freeCount + this.embedsRunning;
  }

  /** Leases one sequence; `tokens` (the prompt) picks the free sequence with the longest cached prefix. */
  async lease(tokens: readonly Token[] | undefined, signal?: AbortSignal): Promise<Lease> {
    if (this.disposed) throw inferenceError("model_unavailable", `model ${this.name} was unloaded`);
    this.leaseStarted();
    let slot: Slot | undefined;
    try {
      slot = await this.queue.acquire(tokens, signal);
      if (tokens?.length) await this.staleTrim.trim(slot.sequence, tokens);
      // disposed while the trim waited for a running decode (pool closed): a lease handed out now
      // would generate on a disposed sequence, its dispose signal already fired
      if (this.disposed) throw inferenceError("model_unavailable", `model ${this.name} was unloaded`);
    } catch (err) {
      if (slot) this.queue.release(slot);
      this.leaseEnded();
      throw err;
    }
    let released = false;
    return {
      slot,
      signal: this.disposeController.signal,
      release: () => {
        if (released) return;
        released = true;
        this.queue.release(slot);
        this.leaseEnded();
      },
    };
  }

  completionFor(slot: Slot): LlamaCompletion {
    return (slot.completion ??= new LlamaCompletion({ contextSequence: slot.sequence }));
  }

  recordPrompt(promptTokens: number, reused: number): void {
    this.generations++;
    this.promptTokensReused += reused;
    this.promptTokensEvaluated += promptTokens - reused;
  }

  /** Embeds texts one after another on the embedding context (made on first use). */
  embed(texts: string[]): Promise<{ vectors: number[][]; promptTokens: number }> {
    if (this.disposed) return Promise.reject(inferenceError("model_unavailable", `model ${this.name} was unloaded`));
    this.leaseStarted();
    const run = this.embedChain.then(async () => {
      this.embedsRunning++;
      if (!this.embedding) {
        const made = this.model.createEmbeddingContext({ contextSize: this.settings.contextSize, threads: this.settings.threads });
        made.catch(() => { if (this.embedding === made) this.embedding = undefined; }); // retry next time
        this.embedding = made;
      }
      const ctx = await this.embedding;
      const vectors: number[][] = [];
      let promptTokens = 0;
      for (const text of texts) {
        const tokens = this.model.tokenize(text);
        if (tokens.length === 0) throw inferenceError("invalid_request", "embedding input must not be empty");
        if (tokens.length > this.settings.contextSize) {
          throw inferenceError("context_length_exceeded", `input of ${tokens.length} tokens exceeds the context size ${this.settings.contextSize} of ${this.name}`);
        }
        promptTokens += tokens.length;
        vectors.push([...(await ctx.getEmbeddingFor(tokens)).vector]);
      }
      return { vectors, promptTokens };
    }).finally(() => this.embedsRunning--);
    this.embedChain = run.catch(() => undefined);
    return run.finally(() => this.leaseEnded());
  }

  /** Takes no new work from the pool; disposes itself once the last lease ends. */
  retire(): void {
    this.retired = true;
    if (this.holds === 0) void this.dispose();
  }

  async dispose(): Promise<void> {
    if (this.disposed) return;
    this.disposed = true;
    this.clearIdleTimer();
    this.disposeController.abort(inferenceError("model_unavailable", `model ${this.name} was unloaded`));
    this.queue.rejectAll(inferenceError("model_unavailable", `model ${this.name} was unloaded`));
    const emb = this.embedding;
    await this.embedChain;
    if (emb) await emb.then((e) => e.dispose(), () => undefined);
    for (const s of this.slots) {
      s.chat.dispose();
      s.completion?.dispose({ disposeSequence: false });
    }
    await this.context.dispose();
    await this.model.dispose();
  }

  private leaseStarted() {
    this.holds++;
    this.clearIdleTimer();
  }

  private leaseEnded() {
    if (--this.holds > 0) return;
    if (this.retired) void this.dispose();
    else this.armIdleTimer();
  }

  private armIdleTimer() {
    const secs = this.settings.idleUnloadSeconds;
    if (!(secs > 0) || this.disposed) return;
    this.clearIdleTimer();
    this.idleUnloadAt = new Date(Date.now() + secs * 1000);
    this.scheduleIdle(this.idleUnloadAt.getTime());
  }

  /** Node fires a timer longer than 2^31-1 ms (about 24.8 days; idleUnloadSeconds has no maximum)
   * after 1 ms: a long interval is waited out in steps no longer than that. */
  private scheduleIdle(at: number) {
    this.idleTimer = setTimeout(() => {
      this.idleTimer = undefined;
      if (this.holds !== 0 || this.disposed) return;
      if (at > Date.now()) return this.scheduleIdle(at);
      this.settings.onIdle(this);
    }, Math.min(Math.max(at - Date.now(), 0), 2 ** 31 - 1));
    this.idleTimer.unref(); // an idle model never keeps the process alive
  }

  private clearIdleTimer() {
    if (this.idleTimer) clearTimeout(this.idleTimer);
    this.idleTimer = undefined;
    this.idleUnloadAt = undefined;
  }
}

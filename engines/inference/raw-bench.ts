// Baseline for the benchmark: decode speed of plain node-llama-cpp (no svc code) on a model file,
// in this process, with the context settings and sampling options svc is then measured with.
import { getLlama, LlamaCompletion, type Llama, type LlamaContextSequence, type LlamaModel, type Token } from "node-llama-cpp";

/** What `sequence.evaluate` takes for sampling; bench/inference.ts passes svc's resolved values. */
export interface RawSampling {
  temperature?: number;
  topK?: number;
  topP?: number;
  minP?: number;
  seed?: number;
}

export interface RawDecodeOptions {
  threads: number;
  /** tokens to generate */
  tokens: number;
  prompt: string;
  contextSize?: number;
  /** sequences the context is made with (svc makes `parallel` of them; default 1) */
  contextSequences?: number;
  /** default greedy (temperature 0) */
  sampling?: RawSampling;
  /** reuse an existing instance (getLlama costs ~0.8 s) */
  llama?: Llama;
  /** reuse a loaded model (the file is then not loaded again) */
  model?: LlamaModel;
}

export interface RawDecodeResult {
  promptTokens: number;
  generatedTokens: number;
  /** prompt evaluation until the first generated token */
  firstTokenMs: number;
  /** generated tokens per second after the first token (decode only) */
  tokensPerSecond: number;
  totalMs: number;
  /** CPU time of this process (every thread) from the prompt to the last token, microseconds */
  cpuMicros: number;
  /** the same from the first token on: decode only */
  decodeCpuMicros: number;
}

const cpuNow = () => {
  const u = process.cpuUsage();
  return u.user + u.system;
};

/** Wall and CPU time of one decode: from creation (the prompt) through `firstToken()` to
 * `result()` (the last token), for both baselines alike. */
class DecodeClock {
  private readonly cpu0 = cpuNow();
  private readonly start = performance.now();
  private first = 0;
  private cpuFirst = 0;

  firstToken(): void {
    this.first = performance.now();
    this.cpuFirst = cpuNow();
  }

  result(promptTokens: number, generatedTokens: number): RawDecodeResult {
    const end = performance.now();
    const cpuEnd = cpuNow();
    return {
      promptTokens,
      generatedTokens,
      firstTokenMs: this.first - this.start,
      tokensPerSecond: generatedTokens > 1 ? ((generatedTokens - 1) * 1000) / (end - this.first) : 0,
      totalMs: end - this.start,
      cpuMicros: cpuEnd - this.cpu0,
      decodeCpuMicros: cpuEnd - this.cpuFirst,
    };
  }
}

/** The prompt as the sequence holds it (BOS first when the model wants one). */
function promptTokens(model: LlamaModel, prompt: string): Token[] {
  const input = model.tokenize(prompt, false, "trimLeadingSpace");
  const bos = model.tokens.shouldPrependBosToken ? model.tokens.bos : null;
  return bos != null ? [bos, ...input] : input;
}

/** Decodes `limit` tokens, detokenizing each as it arrives (as a streaming server must) and
 * nothing else; `onFirst` marks the first token. */
async function decode(model: LlamaModel, sequence: LlamaContextSequence, prompt: Token[], limit: number, sampling: RawSampling, onFirst?: () => void): Promise<number> {
  let n = 0;
  let text = "";
  const recent: Token[] = [];
  for await (const token of sequence.evaluate(prompt, { temperature: 0, ...sampling })) {
    if (n === 0) onFirst?.();
    text += model.detokenize([token], false, recent);
    recent.push(token);
    if (recent.length > 4) recent.shift();
    if (++n >= limit) break;
  }
  void text;
  return n;
}

/** One greedy decode with sequence.evaluate on a fresh context. */
export async function rawDecodeBenchmark(file: string, opts: RawDecodeOptions): Promise<RawDecodeResult> {
  const llama = opts.model ? undefined : (opts.llama ?? (await getLlama({ gpu: false })));
  const model = opts.model ?? (await llama!.loadModel({ modelPath: file }));
  try {
    const context = await model.createContext({ contextSize: opts.contextSize ?? 2048, sequences: opts.contextSequences ?? 1, threads: opts.threads });
    const sequence = context.getSequence();
    const prompt = promptTokens(model, opts.prompt);
    const limit = Math.min(opts.tokens, context.contextSize - prompt.length);
    const clock = new DecodeClock();
    const n = await decode(model, sequence, prompt, limit, opts.sampling ?? {}, () => clock.firstToken());
    const result = clock.result(prompt.length, n);
    await context.dispose();
    return result;
  } finally {
    if (!opts.model) await model.dispose();
    if (llama && !opts.llama) await llama.dispose();
  }
}

/** The same decode through LlamaCompletion (the node-llama-cpp API svc generates with), on a
 * fresh context of the loaded `opts.model`: svc's HTTP and pipeline cost is svc's rate against
 * this one; the API's own cost is this one against rawDecodeBenchmark's. */
export async function rawCompletionBenchmark(model: LlamaModel, opts: RawDecodeOptions): Promise<RawDecodeResult> {
  const context = await model.createContext({ contextSize: opts.contextSize ?? 2048, sequences: opts.contextSequences ?? 1, threads: opts.threads });
  const completion = new LlamaCompletion({ contextSequence: context.getSequence() });
  try {
    const input = model.tokenize(opts.prompt, false, "trimLeadingSpace");
    let n = 0;
    const clock = new DecodeClock();
    await completion.generateCompletion(input, {
      temperature: 0, ...opts.sampling, repeatPenalty: false, maxTokens: opts.tokens, disableContextShift: true,
      onToken: (tokens) => {
        if (n === 0) clock.firstToken();
        n += tokens.length;
      },
      onTextChunk: () => {},
    });
    return clock.result(input.length + (model.tokens.shouldPrependBosToken ? 1 : 0), n);
  } finally {
    completion.dispose({ disposeSequence: false });
    await context.dispose();
  }
}

export interface RawParallelResult {
  sequences: number;
  generatedTokens: number;
  /** all sequences' generated tokens over the wall time from the first prompt to the last token */
  aggregateTps: number;
  wallMs: number;
}

/** The batching limit: `sequences` greedy decodes at once on ONE context (node-llama-cpp batches
 * the sequences of a context that evaluate in the same cycle into one decode per step), in this
 * process, with no svc code. The model is loaded once by the caller. */
export async function rawParallelDecodeBenchmark(model: LlamaModel, opts: RawDecodeOptions & { sequences: number }): Promise<RawParallelResult> {
  const context = await model.createContext({ contextSize: opts.contextSize ?? 2048, sequences: Math.max(opts.sequences, opts.contextSequences ?? 1), threads: opts.threads });
  try {
    const prompt = promptTokens(model, opts.prompt);
    const limit = Math.min(opts.tokens, context.contextSize - prompt.length);
    const start = performance.now();
    const counts = await Promise.all(Array.from({ length: opts.sequences }, () => decode(model, context.getSequence(), prompt, limit, opts.sampling ?? {})));
    const wallMs = performance.now() - start;
    const generatedTokens = counts.reduce((a, b) => a + b, 0);
    return { sequences: opts.sequences, generatedTokens, aggregateTps: (generatedTokens * 1000) / wallMs, wallMs };
  } finally {
    await context.dispose();
  }
}

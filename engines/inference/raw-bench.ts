// Baseline for the benchmark: decode speed of plain node-llama-cpp (no svc code) on a model file,
// in this process, with the same prompt and greedy sampling svc is then measured with.
import { getLlama, type Llama, type LlamaModel, type Token } from "node-llama-cpp";

export interface RawDecodeOptions {
  threads: number;
  /** tokens to generate */
  tokens: number;
  prompt: string;
  contextSize?: number;
  /** reuse an existing instance (getLlama costs ~0.8 s) */
  llama?: Llama;
}

export interface RawDecodeResult {
  promptTokens: number;
  generatedTokens: number;
  /** prompt evaluation until the first generated token */
  firstTokenMs: number;
  /** generated tokens per second after the first token (decode only) */
  tokensPerSecond: number;
  totalMs: number;
}

/** Greedy decode with sequence.evaluate: tokens are detokenized as they arrive (as a streaming
 * server must) but nothing else happens per token. */
export async function rawDecodeBenchmark(file: string, opts: RawDecodeOptions): Promise<RawDecodeResult> {
  const llama = opts.llama ?? (await getLlama({ gpu: false }));
  const model = await llama.loadModel({ modelPath: file });
  try {
    const context = await model.createContext({ contextSize: opts.contextSize ?? 2048, sequences: 1, threads: opts.threads });
    const sequence = context.getSequence();
    const input = model.tokenize(opts.prompt);
    const bos = model.tokens.shouldPrependBosToken ? model.tokens.bos : null;
    const prompt = bos != null ? [bos, ...input] : input;
    const limit = Math.min(opts.tokens, context.contextSize - prompt.length);
    const start = performance.now();
    let first = 0;
    let n = 0;
    let text = "";
    const recent: Token[] = [];
    for await (const token of sequence.evaluate(prompt, { temperature: 0 })) {
      if (n === 0) first = performance.now();
      text += model.detokenize([token], false, recent);
      recent.push(token);
      if (recent.length > 4) recent.shift();
      if (++n >= limit) break;
    }
    const end = performance.now();
    await context.dispose();
    void text;
    return {
      promptTokens: prompt.length,
      generatedTokens: n,
      firstTokenMs: first - start,
      tokensPerSecond: n > 1 ? ((n - 1) * 1000) / (end - first) : 0,
      totalMs: end - start,
    };
  } finally {
    await model.dispose();
    if (!opts.llama) await llama.dispose();
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
  const context = await model.createContext({ contextSize: opts.contextSize ?? 2048, sequences: opts.sequences, threads: opts.threads });
  try {
    const input = model.tokenize(opts.prompt);
    const bos = model.tokens.shouldPrependBosToken ? model.tokens.bos : null;
    const prompt = bos != null ? [bos, ...input] : input;
    const limit = Math.min(opts.tokens, Math.floor(context.contextSize / opts.sequences) - prompt.length);
    const start = performance.now();
    const counts = await Promise.all(
      Array.from({ length: opts.sequences }, async () => {
        const sequence = context.getSequence();
        const recent: Token[] = [];
        let n = 0;
        let text = "";
        for await (const token of sequence.evaluate(prompt, { temperature: 0 })) {
          text += model.detokenize([token], false, recent);
          recent.push(token);
          if (recent.length > 4) recent.shift();
          if (++n >= limit) break;
        }
        void text;
        return n;
      }),
    );
    const wallMs = performance.now() - start;
    const generatedTokens = counts.reduce((a, b) => a + b, 0);
    return { sequences: opts.sequences, generatedTokens, aggregateTps: (generatedTokens * 1000) / wallMs, wallMs };
  } finally {
    await context.dispose();
  }
}

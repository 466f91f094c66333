// Generator of svc's embedded default model: a small llama-architecture GGUF with seeded random
// weights. No weights can be downloaded here, so this file is what tests, the quickstart and the
// benchmark run on. Same bytes on every run (fixed seeds, no timestamps).
// Its output is fluent-looking noise: deterministic at temperature 0, printable, never ending on
// its own (finish "length"). Under a JSON grammar it emits valid JSON, but a string without
// maxLength may never close: random weights rarely pick the closing quote.
import { existsSync } from "node:fs";
import { mkdir, rename, rm } from "node:fs/promises";
import path from "node:path";
import { GgmlType, type GgufValue, type TensorSpec, writeGguf } from "./format";
import { buildVocab, CHATML_TEMPLATE, TokenType, type Vocab } from "./vocab";

export type TinyModelSize = "tiny" | "small" | "medium";

interface Shape { embd: number; blocks: number; heads: number; headsKv: number; ff: number; ctx: number }

export const TINY_MODEL_SHAPES: Record<TinyModelSize, Shape> = {
  tiny: { embd: 64, blocks: 2, heads: 4, headsKv: 2, ff: 192, ctx: 4096 }, // ~0.6 MB
  small: { embd: 256, blocks: 4, heads: 8, headsKv: 4, ff: 704, ctx: 4096 }, // ~13 MB
  medium: { embd: 512, blocks: 8, heads: 8, headsKv: 8, ff: 1408, ctx: 4096 }, // ~105 MB
};

/** mulberry32: tiny, fast, and identical everywhere */
function prng(seed: number) {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

function fnv1a(s: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < s.length; i++) h = Math.imul(h ^ s.charCodeAt(i), 0x01000193);
  return h >>> 0;
}

const f32 = (a: Float32Array) => Buffer.from(a.buffer, a.byteOffset, a.byteLength);

/** uniform noise with the given standard deviation, seeded by the tensor name */
function noise(name: string, n: number, std: number): Float32Array {
  const r = prng(fnv1a(name));
  const a = new Float32Array(n);
  const half = std * Math.sqrt(3);
  for (let i = 0; i < n; i++) a[i] = (r() * 2 - 1) * half;
  return a;
}

function tensors(s: Shape, vocab: Vocab): TensorSpec[] {
  const V = vocab.tokens.length;
  const E = s.embd;
  const kv = (E / s.heads) * s.headsKv;
  const F32 = GgmlType.F32;
  const ones = (name: string): TensorSpec => ({ name, dims: [E], type: F32, fill: () => f32(new Float32Array(E).fill(1)) });
  const rand = (name: string, dims: number[], std: number): TensorSpec =>
    ({ name, dims, type: F32, fill: () => f32(noise(name, dims[0] * dims[1], std)) });
  const out: TensorSpec[] = [rand("token_embd.weight", [E, V], 1)];
  for (let b = 0; b < s.blocks; b++) {
    const p = `blk.${b}.`;
    out.push(
      ones(p + "attn_norm.weight"),
      rand(p + "attn_q.weight", [E, E], 1 / Math.sqrt(E)),
      rand(p + "attn_k.weight", [E, kv], 1 / Math.sqrt(E)),
      rand(p + "attn_v.weight", [E, kv], 1 / Math.sqrt(E)),
      rand(p + "attn_output.weight", [E, E], 1 / Math.sqrt(E)),
      ones(p + "ffn_norm.weight"),
      rand(p + "ffn_gate.weight", [E, s.ff], 1 / Math.sqrt(E)),
      rand(p + "ffn_up.weight", [E, s.ff], 1 / Math.sqrt(E)),
      rand(p + "ffn_down.weight", [s.ff, E], 1 / Math.sqrt(s.ff)),
    );
  }
  out.push(ones("output_norm.weight"), {
    name: "output.weight",
    dims: [E, V],
    type: F32,
    fill: () => {
      // Logit std ~5 makes the best normal token win by a wide margin; rows of control and byte
      // tokens are zero (logit 0), so output stays printable text and runs to max tokens.
      const w = noise("output.weight", E * V, 5 / Math.sqrt(E));
      for (let t = 0; t < V; t++) if (vocab.types[t] !== TokenType.Normal) w.fill(0, t * E, (t + 1) * E);
      return f32(w);
    },
  });
  return out;
}

function metadata(size: TinyModelSize, s: Shape, vocab: Vocab): [string, GgufValue][] {
  return [
    ["general.architecture", { str: "llama" }],
    ["general.name", { str: `svc-${size}` }],
    ["general.alignment", { u32: 32 }],
    ["general.file_type", { u32: 0 }], // all F32
    ["llama.context_length", { u32: s.ctx }],
    ["llama.embedding_length", { u32: s.embd }],
    ["llama.block_count", { u32: s.blocks }],
    ["llama.feed_forward_length", { u32: s.ff }],
    ["llama.attention.head_count", { u32: s.heads }],
    ["llama.attention.head_count_kv", { u32: s.headsKv }],
    ["llama.attention.layer_norm_rms_epsilon", { f32: 1e-5 }],
    ["llama.rope.dimension_count", { u32: s.embd / s.heads }],
    ["llama.rope.freq_base", { f32: 10000 }],
    ["llama.vocab_size", { u32: vocab.tokens.length }],
    ["tokenizer.ggml.model", { str: "llama" }],
    ["tokenizer.ggml.tokens", { strings: vocab.tokens }],
    ["tokenizer.ggml.scores", { f32s: vocab.scores }],
    ["tokenizer.ggml.token_type", { i32s: vocab.types }],
    ["tokenizer.ggml.bos_token_id", { u32: vocab.bos }],
    ["tokenizer.ggml.eos_token_id", { u32: vocab.eos }],
    ["tokenizer.ggml.eot_token_id", { u32: vocab.imEnd }],
    ["tokenizer.ggml.unknown_token_id", { u32: vocab.unk }],
    ["tokenizer.ggml.add_bos_token", { bool: true }],
    ["tokenizer.ggml.add_eos_token", { bool: false }],
    // true would put a stray space after every ChatML special token
    ["tokenizer.ggml.add_space_prefix", { bool: false }],
    ["tokenizer.chat_template", { str: CHATML_TEMPLATE }],
  ];
}

/** Writes the generated model of the given size to `file` (overwriting it). */
export async function writeTinyGguf(file: string, size: TinyModelSize): Promise<{ file: string; bytes: number }> {
  const shape = TINY_MODEL_SHAPES[size];
  if (!shape) throw new Error(`unknown model size ${size}`);
  const vocab = buildVocab();
  const bytes = await writeGguf(file, metadata(size, shape, vocab), tensors(shape, vocab));
  return { file, bytes };
}

export const DEFAULT_MODEL_FILE = "svc-tiny.gguf";

export function defaultModelPath(modelsDir: string): string {
  return path.join(modelsDir, DEFAULT_MODEL_FILE);
}

/** Writes `<modelsDir>/svc-tiny.gguf` unless present. Written to a temporary name and renamed, so
 * a concurrent reader never sees a half-written file. */
export async function ensureTinyModel(modelsDir: string, size: TinyModelSize = "tiny"): Promise<string> {
  const file = size === "tiny" ? defaultModelPath(modelsDir) : path.join(modelsDir, `svc-${size}.gguf`);
  if (existsSync(file)) return file;
  await mkdir(modelsDir, { recursive: true });
  const tmp = `${file}.${process.pid}.${Math.random().toString(36).slice(2)}.tmp`;
  try {
    await writeTinyGguf(tmp, size);
    await rename(tmp, file);
  } catch (err) {
    await rm(tmp, { force: true });
    throw err;
  }
  return file;
}

// Prompt tokens of a chat request as the model that serves it counts them, for reservations and
// token_limits.per_request_max (a limit in tokens must not refuse a request whose true size fits):
// - a local GGUF model that is loaded: its own tokenizer and chat template (node-llama-cpp),
//   exactly what its answer reports; an unloaded one is not loaded for a count;
// - OpenAI-family models (gpt-*, chatgpt-*, o1/o3/o4*, text-embedding-*, and any model of a
//   Provider of type openai / azure-openai): OpenAI's BPE (gpt-tokenizer), chat framing included,
//   which is what OpenAI reports as prompt_tokens;
// - anything else: the byte estimate (estimate.ts), an upper bound.
// Settlement always uses the upstream's own usage when it reports one (pipeline.finish).
import type { ChatRequest } from "../chat/types";
import { estimateTokens, estimateTextTokens, utf8Bytes } from "./estimate";
import type { LocalPool } from "./local";
import type { RouteTarget } from "./types";

type Encoding = "o200k_base" | "cl100k_base";
interface Encoder {
  encode(s: string, opts?: { disallowedSpecial?: Set<string> }): number[];
  encodeChat(chat: Array<{ role: string; content: string; name?: string }>, model: string): number[];
}

// The rank tables are large: each is imported on first use, then counting is synchronous.
const encoders = new Map<Encoding, Encoder>();
const loading = new Map<Encoding, Promise<Encoder>>();
/** the model name gpt-tokenizer frames chats for, per encoding (same framing: 3 per message + 3) */
const CHAT_MODEL: Record<Encoding, string> = { o200k_base: "gpt-4o", cl100k_base: "gpt-4" };

function loadEncoder(enc: Encoding): Promise<Encoder> {
  let p = loading.get(enc);
  if (!p) {
    const mod = enc === "o200k_base" ? import("gpt-tokenizer/encoding/o200k_base") : import("gpt-tokenizer/encoding/cl100k_base");
    p = mod.then((m) => {
      const e = m as unknown as Encoder;
      encoders.set(enc, e);
      return e;
    });
    loading.set(enc, p);
  }
  return p;
}

/** The OpenAI encoding of a model name, or undefined when the name is not OpenAI's. */
export function openAiEncoding(model: string, providerType?: string): Encoding | undefined {
  const m = model.toLowerCase().replace(/^openai\//, "");
  if (/^(gpt-3\.5|gpt-4(-|$)|text-embedding-)/.test(m) && !/^gpt-4-?o/.test(m)) return "cl100k_base";
  if (/^(gpt-|chatgpt-|o[134](-|$)|omni-)/.test(m)) return "o200k_base";
  if (providerType === "openai" || providerType === "azure-openai") return "o200k_base";
  return undefined;
}

/** The OpenAI encoding a target counts with (by its upstream name and Provider type, else by the
 * name clients use), or undefined. */
const encodingOf = (t: RouteTarget): Encoding | undefined => {
  // targets are the router's own objects, kept until the config changes: judge each name once
  let e = encodingMemo.get(t);
  if (e === undefined) encodingMemo.set(t, (e = openAiEncoding(t.upstreamModel, t.type) ?? openAiEncoding(t.model) ?? null));
  return e ?? undefined;
};
const encodingMemo = new WeakMap<RouteTarget, Encoding | null>();

// encodeChat builds its special-token patterns on every call (~10 µs for a short chat); the framing
// is additive (each message: its role's framing plus its content encoded alone; then the reply's
// priming), so it is measured once per role and the contents are encoded alone (~1 µs). Messages
// with a `name` frame differently: those are framed by one encodeChat of the chat with empty contents.
const framing = new Map<string, number>();
function frameOf(e: Encoder, enc: Encoding, role: string): number {
  const k = `${enc}\u0000${role}`;
  let n = framing.get(k);
  if (n === undefined) {
    n = e.encodeChat([{ role, content: "" }], CHAT_MODEL[enc]).length - priming(e, enc);
    framing.set(k, n);
  }
  return n;
}
const primed = new Map<Encoding, number>();
function priming(e: Encoder, enc: Encoding): number {
  let n = primed.get(enc);
  if (n === undefined) primed.set(enc, (n = e.encodeChat([], CHAT_MODEL[enc]).length));
  return n;
}
const NO_SPECIAL = { disallowedSpecial: new Set<string>() }; // special-token text counts as text, as in encodeChat

function chatTokens(e: Encoder, enc: Encoding, req: ChatRequest): number {
  if (req.messages.some((m) => m.name)) {
    // framed with their names in one encodeChat of empty contents; contents encoded alone as text
    let framed = e.encodeChat(req.messages.map((m) => ({ role: m.role, content: "", ...(m.name ? { name: m.name } : {}) })), CHAT_MODEL[enc]).length;
    for (const m of req.messages) if (m.content) framed += e.encode(m.content, NO_SPECIAL).length;
    return framed;
  }
  let n = priming(e, enc);
  for (const m of req.messages) n += frameOf(e, enc, m.role) + (m.content ? e.encode(m.content, NO_SPECIAL).length : 0);
  return n;
}

function countOpenAi(e: Encoder, enc: Encoding, req: ChatRequest): number {
  if (req.prompt !== undefined && !req.messages.length) return e.encode(req.prompt, NO_SPECIAL).length;
  let n = chatTokens(e, enc, req);
  for (const m of req.messages) for (const c of m.toolCalls ?? []) n += e.encode(c.name, NO_SPECIAL).length + e.encode(c.arguments, NO_SPECIAL).length + 3;
  if (req.tools?.length) n += e.encode(JSON.stringify(req.tools), NO_SPECIAL).length;
  if (req.prompt) n += e.encode(req.prompt, NO_SPECIAL).length;
  return n;
}

/** Prompt tokens of `req` on one target: a number, or a promise when a tokenizer must load first. */
export function promptTokens(t: RouteTarget, req: ChatRequest, pool?: LocalPool): number | Promise<number> {
  if (t.type === "local") {
    const local = t.upstreamModel === req.model ? req : { ...req, model: t.upstreamModel };
    const n = pool?.loadedChatTokens?.(local);
    return n ? n.catch(() => estimateTokens(req)) : estimateTokens(req);
  }
  const enc = encodingOf(t);
  if (!enc) return estimateTokens(req);
  const e = encoders.get(enc);
  if (e) return countOpenAi(e, enc, req);
  return loadEncoder(enc).then((l) => countOpenAi(l, enc, req), () => estimateTokens(req));
}

/** The largest count over the targets a request may go to (a reservation must cover any of them). */
export function promptTokensOf(targets: readonly RouteTarget[], req: ChatRequest, pool?: LocalPool): number | Promise<number> {
  if (targets.length === 1) return promptTokens(targets[0], req, pool);
  const all = targets.map((t) => promptTokens(t, req, pool));
  if (all.every((n) => typeof n === "number")) return Math.max(0, ...(all as number[]));
  return Promise.all(all).then((ns) => Math.max(0, ...ns));
}

// A bound without tokenizing: every BPE token stands for at least one byte of its text, so the
// bytes plus the framing (OpenAI's is 3-4 tokens a message and 3 to prime; taken generously here)
// are never fewer than the count. A request well inside per_request_max is then judged without
// loading the tokenizer (its rank tables hold ~20 MB that every full GC walks).
const FRAME_BOUND = 8;
const PRIMING_BOUND = 16;
function byteBound(req: ChatRequest): number {
  let n = PRIMING_BOUND + (req.prompt ? utf8Bytes(req.prompt) : 0);
  for (const m of req.messages) {
    n += FRAME_BOUND + utf8Bytes(m.role) + (m.name ? utf8Bytes(m.name) : 0) + (m.content ? utf8Bytes(m.content) : 0);
    if (m.toolCalls) for (const c of m.toolCalls) n += utf8Bytes(c.name) + utf8Bytes(c.arguments) + 3;
  }
  if (req.tools?.length) n += utf8Bytes(JSON.stringify(req.tools));
  return n;
}

/** A number never below promptTokensOf's count, found without a tokenizer; undefined when a
 * target is a local model (its own chat template may add text of its own). */
export function promptTokensBound(targets: readonly RouteTarget[], req: ChatRequest): number | undefined {
  let max = 0;
  for (const t of targets) {
    if (t.type === "local") return undefined;
    max = Math.max(max, encodingOf(t) ? byteBound(req) : estimateTokens(req));
  }
  return max;
}

/** Tokens of embedding inputs on a target (one per input for the separator, as before). */
export function inputTokens(t: RouteTarget, input: string[]): number | Promise<number> {
  const enc = t.type === "local" ? undefined : encodingOf(t);
  const est = () => input.reduce((n, s) => n + estimateTextTokens(s) + 1, 0);
  if (!enc) return est();
  const count = (e: Encoder) => input.reduce((n, s) => n + e.encode(s, NO_SPECIAL).length, 0);
  const e = encoders.get(enc);
  return e ? count(e) : loadEncoder(enc).then(count, est);
}

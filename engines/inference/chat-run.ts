// One generation on a leased sequence: prepares the prompt (chat template or raw), then streams
// node-llama-cpp's callbacks out as ChatEvents. Plain text, forced tool calls (JSON-schema
// grammar), model-chosen tool calls (node-llama-cpp function calling, never executed here), and
// raw completions all share the lease, abort and accounting logic below.
import { randomBytes } from "node:crypto";
import type { ChatHistoryItem, ChatModelFunctions, ChatWrapperGeneratedContextState, LlamaContextSequence, LlamaGrammar, LlamaModel, LlamaText, Token } from "node-llama-cpp";
import type { ChatEvent, ChatRequest, FinishReason, ToolDef } from "../chat/types";
import { EventChannel } from "./channel";
import { abortError, inferenceError } from "./errors";
import { forcedToolInstruction, toChatHistory } from "./history";
import { type GrammarCache, grammarSpec, toGbnfSchema } from "./json-schema";
import type { Lease, LoadedModel } from "./loaded-model";
import { llamaSamplingOptions, type ResolvedSampling } from "./sampling";
import { WrappedCallParser } from "./wrapped-call";

type Mode =
  | { kind: "completion" }
  | { kind: "text" }
  | { kind: "forced"; tools: ToolDef[] } // one tool: grammar = its arguments; several: {"name", "arguments"}
  | { kind: "auto"; functions: ChatModelFunctions };

interface Prepared {
  mode: Mode;
  history?: ChatHistoryItem[];
  /** prompt tokens as the sequence will hold them */
  tokens: Token[];
  /** generate with LlamaCompletion: the prompt without the BOS token it prepends itself */
  completionInput?: Token[];
  /** the chat template's end-of-turn triggers, when a chat generates through LlamaCompletion */
  templateStops?: LlamaText[];
  grammar?: LlamaGrammar;
}

export const newCallId = () => "call_" + randomBytes(12).toString("hex");

/** Holds back trailing whitespace until more text follows: JSON grammars end with newlines
 * (their stop trigger) that are not part of the arguments. */
function trailingWhitespaceHoldback(emit: (text: string) => void) {
  let pending = "";
  return (text: string) => {
    pending += text;
    const end = pending.trimEnd().length;
    if (end === 0) return;
    emit(pending.slice(0, end));
    pending = pending.slice(end);
  };
}

function chooseMode(req: ChatRequest): Mode {
  if (req.prompt !== undefined) return { kind: "completion" };
  const tools = req.tools ?? [];
  const choice = req.toolChoice ?? (tools.length ? "auto" : "none");
  if (choice !== "none" && !tools.length) throw inferenceError("invalid_request", "tool_choice needs tools");
  if (new Set(tools.map((t) => t.name)).size !== tools.length) throw inferenceError("invalid_request", "tool names must be unique");
  if (choice === "none") return { kind: "text" };
  if (typeof choice === "object") {
    const tool = tools.find((t) => t.name === choice.name);
    if (!tool) throw inferenceError("invalid_request", `tool_choice names unknown tool ${choice.name}`);
    return { kind: "forced", tools: [tool] };
  }
  if (choice === "required") return { kind: "forced", tools };
  const functions: Record<string, { description?: string; params?: never }> = {};
  for (const t of tools) functions[t.name] = { description: t.description, params: (t.parameters ? toGbnfSchema(t.parameters) : undefined) as never };
  return { kind: "auto", functions };
}

function grammarSchema(mode: Mode, req: ChatRequest): unknown {
  if (mode.kind === "forced") {
    if (mode.tools.length === 1) return mode.tools[0].parameters ?? { type: "object" };
    // "name" first: properties are generated in order, so the name is known before the arguments
    return {
      anyOf: mode.tools.map((t) => ({
        type: "object",
        properties: { name: { const: t.name }, arguments: t.parameters ?? { type: "object" } },
        required: ["name", "arguments"],
      })),
    };
  }
  return mode.kind === "auto" ? undefined : req.responseSchema;
}

/** Validates the request and renders its prompt (no lease is held yet). `maxTokens` bounds the
 * generation; a JSON grammar sizes its free strings to fit it. */
export async function prepare(lm: LoadedModel, req: ChatRequest, grammars: GrammarCache, maxTokens: number): Promise<Prepared> {
  const p = await render(lm, req, grammars, Math.min(maxTokens, lm.context.contextSize));
  const ctxSize = lm.context.contextSize;
  if (p.tokens.length >= ctxSize) {
    throw inferenceError("context_length_exceeded", `prompt of ${p.tokens.length} tokens does not fit the context size ${ctxSize} of ${lm.name}`);
  }
  return p;
}

/** Prompt tokens a request renders to (the count its answer reports as prompt tokens). */
export async function promptTokenCount(lm: LoadedModel, req: ChatRequest, grammars: GrammarCache): Promise<number> {
  return (await render(lm, req, grammars, lm.context.contextSize)).tokens.length;
}

async function render(lm: LoadedModel, req: ChatRequest, grammars: GrammarCache, maxTokens: number): Promise<Prepared> {
  const mode = chooseMode(req);
  const schema = grammarSchema(mode, req);
  const grammar = schema === undefined ? undefined : await grammars.get(grammarSpec(schema, maxTokens));
  const model = lm.model;
  if (mode.kind === "completion") {
    const input = model.tokenize(req.prompt ?? "", false, "trimLeadingSpace");
    const bos = model.tokens.shouldPrependBosToken ? model.tokens.bos : null;
    return { mode, tokens: bos != null ? [bos, ...input] : input, completionInput: input, grammar };
  }
  if (!req.messages?.length) throw inferenceError("invalid_request", "messages must not be empty");
  const history = toChatHistory(req.messages);
  if (mode.kind === "forced") history.unshift(forcedToolInstruction(mode.tools, mode.tools.length > 1));
  // Rendered the way LlamaChat renders it, to count prompt tokens and find the cached prefix.
  const state = lm.chatWrapper.generateContextState({
    chatHistory: history,
    availableFunctions: mode.kind === "auto" ? mode.functions : undefined,
    documentFunctionParams: true,
  });
  const tokens = state.contextText.tokenize(lm.promptTokenizer);
  const prepared: Prepared = { mode, history, tokens, grammar };
  if (mode.kind === "text" && isPlainTemplateState(state, lm)) {
    const input = stripPrependedBos(model, tokens);
    if (input) Object.assign(prepared, { completionInput: input, templateStops: state.stopGenerationTriggers });
  }
  return prepared;
}

/** Plain text from a template with no segments (thoughts), no start text to skip and no special
 * triggers is generated through LlamaCompletion: the same tokens and sampling as LlamaChat,
 * with less per-token work (measurable on small models, where decode is sub-millisecond). */
function isPlainTemplateState(state: ChatWrapperGeneratedContextState, lm: LoadedModel): boolean {
  const segments = lm.chatWrapper.settings.segments;
  if (segments?.thought || segments?.comment) return false;
  return Object.keys(state).every((k) => k === "contextText" || k === "stopGenerationTriggers" || (state as Record<string, unknown>)[k] == null);
}

/** LlamaCompletion prepends BOS to its input when the model wants one; the rendered template
 * already starts with it. Undefined when the two would not line up. */
function stripPrependedBos(model: LlamaModel, tokens: Token[]): Token[] | undefined {
  const bos = model.tokens.shouldPrependBosToken ? model.tokens.bos : null;
  if (bos == null) return tokens;
  return tokens[0] === bos ? tokens.slice(1) : undefined;
}

/** Streams one generation on a leased sequence. Generation stops when the stream ends, fails, is
 * aborted through `signal`, or the consumer stops iterating. The lease is released as soon as the
 * generation has ended; the caller releases it too (idempotent), for the paths that never start one. */
export async function* generate(lm: LoadedModel, lease: Lease, p: Prepared, sampling: ResolvedSampling, signal?: AbortSignal): AsyncGenerator<ChatEvent> {
  const promptTokens = p.tokens.length;
  // capped so the sequence never needs a context shift (which would drop history silently)
  const maxTokens = Math.min(sampling.maxTokens, lm.context.contextSize - promptTokens);
  const ac = new AbortController();
  const onAbort = (s: AbortSignal) => () => ac.abort(abortError(s));
  const stopOnCaller = signal ? onAbort(signal) : undefined;
  const stopOnDispose = onAbort(lease.signal);
  signal?.addEventListener("abort", stopOnCaller!);
  lease.signal.addEventListener("abort", stopOnDispose);
  let run: Promise<void> | undefined;
  try {
    if (signal?.aborted) throw abortError(signal);
    const { sequence } = lease.slot;
    // the sequence keeps its tokens between leases: LlamaChat/LlamaCompletion evaluate only past
    // the common prefix (at least one token is always re-evaluated to sample from)
    const reused = Math.min(sequence.compareContextTokens(p.tokens).firstDifferentIndex, promptTokens - 1);
    lm.recordPrompt(promptTokens, reused);
    const outputBefore = sequence.tokenMeter.usedOutputTokens;
    const ch = new EventChannel<ChatEvent>();
    // The sequence is idle once the run settles (its usage read first): the lease goes back then,
    // not when the consumer has read the buffered events, so a client that stops reading (its
    // socket full) does not keep a sequence, and the requests queued for it, waiting on it.
    // The caller's own release afterwards is a no-op.
    run = runOn(lm, lease.slot, p, sampling, maxTokens, ac.signal, ch).then(
      ({ finishReason, stopSequence }) => {
        const usage = { promptTokens, completionTokens: sequence.tokenMeter.usedOutputTokens - outputBefore };
        lease.release();
        ch.push({ type: "done", finishReason, usage, ...(stopSequence !== undefined ? { stopSequence } : {}) });
        ch.end();
      },
      (err) => {
        lease.release();
        ch.end(ac.signal.aborted ? ac.signal.reason : err);
      },
    );
    yield* ch;
  } finally {
    ac.abort(abortError()); // no-op when finished; stops generation when the consumer left early
    await run;
    signal?.removeEventListener("abort", stopOnCaller!);
    lease.signal.removeEventListener("abort", stopOnDispose);
  }
}

type StopMeta = { stopReason: string; customStopTrigger?: readonly (string | Token)[] };
interface Ending {
  finishReason: FinishReason;
  stopSequence?: string;
}

/** How a text generation ended: length, or stop (naming the caller's stop sequence that matched;
 * the chat template's own end triggers are not the caller's and are not named). */
function textEnding(meta: StopMeta, stops: readonly string[]): Ending {
  if (meta.stopReason === "maxTokens") return { finishReason: "length" };
  if (meta.stopReason === "customStopTrigger" && meta.customStopTrigger) {
    const hit = meta.customStopTrigger.filter((x): x is string => typeof x === "string").join("");
    if (stops.includes(hit)) return { finishReason: "stop", stopSequence: hit };
  }
  return { finishReason: "stop" };
}

/** Records the tokens sampled on `sequence` while installed (node-llama-cpp's LlamaCompletion and
 * LlamaChat both generate through `sequence.evaluate`, which yields each sampled token). */
function recordSampled(sequence: LlamaContextSequence): { tokens: Token[]; remove(): void } {
  const tokens: Token[] = [];
  const seq = sequence as unknown as { evaluate: LlamaContextSequence["evaluate"] };
  const original = seq.evaluate;
  const own = Object.prototype.hasOwnProperty.call(seq, "evaluate");
  seq.evaluate = function (this: LlamaContextSequence, ...args: Parameters<LlamaContextSequence["evaluate"]>) {
    const it = original.apply(this, args);
    const next = it.next.bind(it);
    it.next = (...a) => next(...a).then((r) => { if (!r.done) tokens.push(r.value); return r; });
    return it;
  } as LlamaContextSequence["evaluate"];
  return { tokens, remove: () => { if (own) seq.evaluate = original; else delete (seq as { evaluate?: unknown }).evaluate; } };
}

async function runOn(
  lm: LoadedModel, slot: LoadedModel["slots"][number], p: Prepared, sampling: ResolvedSampling,
  maxTokens: number, signal: AbortSignal, ch: EventChannel<ChatEvent>,
): Promise<Ending> {
  // node-llama-cpp holds back generated text that may be the start of a stop string, and drops it
  // when maxTokens ends the generation there: the client lost the answer's last words (counted
  // in usage all the same). With the caller's stop strings, the sampled tokens are recorded so
  // that a "length" ending emits what was held back (flushHeld).
  const sampled = sampling.stop.length && p.mode.kind !== "forced" ? recordSampled(slot.sequence) : undefined;
  let emitted = "";
  const text = (t: string) => {
    if (!t) return;
    if (sampled) emitted += t;
    ch.push({ type: "text", text: t });
  };
  const flushHeld = (ending: Ending, trimEnd: boolean): Ending => {
    if (!sampled || ending.finishReason !== "length") return ending;
    const whole = lm.model.detokenize(sampled.tokens, false);
    // only when what was emitted is exactly the start of what was sampled (no tool-call syntax or
    // template segment in between); an incomplete trailing character stays out, as the library does
    if (whole.length > emitted.length && whole.startsWith(emitted)) {
      let rest = whole.slice(emitted.length).replace(/\uFFFD+$/, "");
      if (trimEnd) rest = rest.trimEnd();
      text(rest);
    }
    return ending;
  };
  try {
    return await runWith(lm, slot, p, sampling, maxTokens, signal, ch, text, flushHeld);
  } finally {
    sampled?.remove();
  }
}

async function runWith(
  lm: LoadedModel, slot: LoadedModel["slots"][number], p: Prepared, sampling: ResolvedSampling,
  maxTokens: number, signal: AbortSignal, ch: EventChannel<ChatEvent>,
  text: (t: string) => void, flushHeld: (ending: Ending, trimEnd: boolean) => Ending,
): Promise<Ending> {
  const base = { ...llamaSamplingOptions(sampling), maxTokens, signal, stopOnAbortSignal: false };
  const mode = p.mode;
  const trimEnd = !!p.grammar?.trimWhitespaceSuffix;

  if (p.completionInput) {
    const stops = [...(p.templateStops ?? []), ...sampling.stop];
    const res = await lm.completionFor(slot).generateCompletionWithMeta(p.completionInput, {
      ...base, ...(stops.length ? { customStopTriggers: stops } : {}), onTextChunk: text, grammar: p.grammar, disableContextShift: true,
    });
    return flushHeld(textEnding(res.metadata, sampling.stop), trimEnd);
  }

  if (mode.kind === "forced") {
    let onChunk: (t: string) => void;
    const delta = trailingWhitespaceHoldback((argumentsDelta) => ch.push({ type: "tool_call_delta", index: 0, argumentsDelta }));
    if (mode.tools.length === 1) {
      ch.push({ type: "tool_call_start", index: 0, id: newCallId(), name: mode.tools[0].name });
      onChunk = delta;
    } else {
      const parser = new WrappedCallParser();
      onChunk = (t) => {
        const { name, args } = parser.push(t);
        if (name !== undefined) ch.push({ type: "tool_call_start", index: 0, id: newCallId(), name });
        if (args) delta(args);
      };
    }
    // stop strings apply to text, never inside the arguments JSON
    const { customStopTriggers: _unused, ...noStop } = base as typeof base & { customStopTriggers?: string[] };
    const res = await slot.chat.generateResponse(p.history!, { ...noStop, grammar: p.grammar, onTextChunk: onChunk });
    return { finishReason: res.metadata.stopReason === "maxTokens" ? "length" : "tool_calls" };
  }

  if (mode.kind === "auto") {
    const started = new Map<number, { index: number; delta: (t: string) => void }>(); // by node-llama-cpp callIndex
    const res = await slot.chat.generateResponse(p.history!, {
      ...base,
      functions: mode.functions,
      documentFunctionParams: true,
      onTextChunk: text,
      onFunctionCallParamsChunk: (c) => {
        let call = started.get(c.callIndex);
        if (!call) {
          const index = started.size;
          call = { index, delta: trailingWhitespaceHoldback((argumentsDelta) => ch.push({ type: "tool_call_delta", index, argumentsDelta })) };
          started.set(c.callIndex, call);
          ch.push({ type: "tool_call_start", index, id: newCallId(), name: c.functionName });
        }
        call.delta(c.paramsChunk);
      },
    });
    const calls = res.functionCalls ?? [];
    // calls whose parameters never streamed (functions without parameters) still get reported
    calls.forEach((call, i) => {
      if (started.has(i)) return;
      const index = started.size;
      started.set(i, { index, delta: () => {} });
      ch.push({ type: "tool_call_start", index, id: newCallId(), name: call.functionName });
      ch.push({ type: "tool_call_delta", index, argumentsDelta: JSON.stringify(call.params ?? {}) });
    });
    if (calls.length) return { finishReason: "tool_calls" };
    return started.size ? textEnding(res.metadata, sampling.stop) : flushHeld(textEnding(res.metadata, sampling.stop), false);
  }

  const res = await slot.chat.generateResponse(p.history!, { ...base, grammar: p.grammar, onTextChunk: text });
  return flushHeld(textEnding(res.metadata, sampling.stop), trimEnd);
}

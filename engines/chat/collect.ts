// Folds a stream of ChatEvents into one complete response, for non-streaming routes.
import type { ChatEvent, FinishReason, ToolCall, Usage } from "./types";

export interface ChatResult {
  text: string;
  toolCalls: ToolCall[];
  finishReason: FinishReason;
  usage: Usage;
  /** the stop sequence that ended the text, when known */
  stopSequence?: string;
  /** the upstream's own answer, when it may be passed through (UpstreamAnswer) */
  upstream?: UpstreamAnswer;
}

/** An OpenAI chat.completion body exactly as the upstream sent it, already in svc's normal form
 * (one choice, finish reason and usage as svc would write them), with the model it names: a
 * route speaking the same protocol may send `text` as it is when `model` is the served model
 * (docs/gate.md, "The answer's body"). */
export interface UpstreamAnswer {
  text: string;
  model: string;
}

/**
 * Events that are all known up front (a non-streaming upstream answer). Still an ordinary
 * AsyncIterable for streaming consumers; `sync` lets collectChat fold them in one synchronous
 * pass instead of paying an async-generator hop and a promise per event in every layer.
 * Both views share one underlying iteration: consume only one of them, once.
 */
export interface SyncEvents extends AsyncIterable<ChatEvent> {
  readonly sync: Iterable<ChatEvent>;
  /** the body the events were read from, when it may be passed through; a layer that changes
   * the events makes a new object without it */
  readonly upstream?: UpstreamAnswer;
}

export function syncEvents(events: Iterable<ChatEvent>, upstream?: UpstreamAnswer): SyncEvents {
  return upstream ? { sync: events, upstream, [Symbol.asyncIterator]: () => asAsync(events) } : { sync: events, [Symbol.asyncIterator]: () => asAsync(events) };
}

export function isSyncEvents(x: AsyncIterable<ChatEvent>): x is SyncEvents {
  return (x as Partial<SyncEvents>).sync !== undefined;
}

async function* asAsync(events: Iterable<ChatEvent>): AsyncGenerator<ChatEvent> {
  yield* events;
}

interface Fold {
  text: string;
  calls: ToolCall[];
  finishReason: FinishReason;
  usage: Usage;
  stopSequence?: string;
}

function add(f: Fold, ev: ChatEvent): void {
  switch (ev.type) {
    case "text":
      f.text += ev.text;
      break;
    case "tool_call_start":
      f.calls[ev.index] = { id: ev.id, name: ev.name, arguments: "" };
      break;
    case "tool_call_delta":
      f.calls[ev.index].arguments += ev.argumentsDelta;
      break;
    case "done":
      f.finishReason = ev.finishReason;
      f.usage = ev.usage;
      f.stopSequence = ev.stopSequence;
      break;
  }
}

const newFold = (): Fold => ({ text: "", calls: [], finishReason: "stop", usage: { promptTokens: 0, completionTokens: 0 } });

function resultOf(f: Fold, upstream: UpstreamAnswer | undefined): ChatResult {
  const r: ChatResult = { text: f.text, toolCalls: f.calls.filter(Boolean), finishReason: f.finishReason, usage: f.usage };
  if (f.stopSequence !== undefined) r.stopSequence = f.stopSequence;
  if (upstream) r.upstream = upstream;
  return r;
}

/** Fold events known up front in one synchronous pass: no promise, no microtask turn. */
export function collectSync(events: SyncEvents): ChatResult {
  const f = newFold();
  for (const ev of events.sync) add(f, ev);
  return resultOf(f, events.upstream);
}

export async function collectChat(events: AsyncIterable<ChatEvent>): Promise<ChatResult> {
  if (isSyncEvents(events)) return collectSync(events);
  const f = newFold();
  for await (const ev of events) add(f, ev);
  return resultOf(f, undefined);
}

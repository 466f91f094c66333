// Folds a stream of ChatEvents into one complete response, for non-streaming routes.
import type { ChatEvent, FinishReason, ToolCall, Usage } from "./types";

export interface ChatResult {
  text: string;
  toolCalls: ToolCall[];
  finishReason: FinishReason;
  usage: Usage;
  /** the stop sequence that ended the text, when known */
  stopSequence?: string;
}

/**
 * Events that are all known up front (a non-streaming upstream answer). Still an ordinary
 * AsyncIterable for streaming consumers; `sync` lets collectChat fold them in one synchronous
 * pass instead of paying an async-generator hop and a promise per event in every layer.
 * Both views share one underlying iteration: consume only one of them, once.
 */
export interface SyncEvents extends AsyncIterable<ChatEvent> {
  readonly sync: Iterable<ChatEvent>;
}

export function syncEvents(events: Iterable<ChatEvent>): SyncEvents {
  return { sync: events, [Symbol.asyncIterator]: () => asAsync(events) };
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

export async function collectChat(events: AsyncIterable<ChatEvent>): Promise<ChatResult> {
  const f: Fold = { text: "", calls: [], finishReason: "stop", usage: { promptTokens: 0, completionTokens: 0 } };
  if (isSyncEvents(events)) for (const ev of events.sync) add(f, ev);
  else for await (const ev of events) add(f, ev);
  const r: ChatResult = { text: f.text, toolCalls: f.calls.filter(Boolean), finishReason: f.finishReason, usage: f.usage };
  if (f.stopSequence !== undefined) r.stopSequence = f.stopSequence;
  return r;
}

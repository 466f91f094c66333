// Streams in flight (registered by api/sse.ts streamEvents), so that stopping the server ends
// each with its protocol's terminal frame (OpenAI: an error event then [DONE]; Anthropic: an
// error event; Ollama: an error line) instead of cutting the socket when the grace runs out. Keyed by the local port the request came in
// on, so several servers in one process (tests) stop only their own streams.
import type { Cancellation } from "../engines/chat/cancel";
import { SvcError } from "../engines/errors";
import { within } from "../prisma/waits";

export interface LiveStream {
  cancel: Cancellation;
  port: number | undefined;
  /** set when the server stops: the error the stream ends with */
  stopping?: SvcError;
  onDone?: () => void;
}

const live = new Set<LiveStream>();
/** ports whose server is stopping: a stream that starts there now ends at once */
const stoppingPorts = new Map<number | undefined, SvcError>();

export const shuttingDown = () => new SvcError("unavailable", "model_unavailable", "svc is shutting down; this answer was cut short. Retry the request.");

export function track(cancel: Cancellation, port: number | undefined): LiveStream {
  const entry: LiveStream = { cancel, port };
  live.add(entry);
  const stopping = stoppingPorts.get(entry.port);
  if (stopping) stop(entry, stopping);
  return entry;
}

export function untrack(entry: LiveStream): void {
  live.delete(entry);
  entry.onDone?.();
}

function stop(entry: LiveStream, err: SvcError): void {
  if (entry.stopping) return;
  entry.stopping = err;
  // an AbortError: generation stops, and the audit records the request as cancelled
  entry.cancel.abort(new DOMException(err.message, "AbortError"));
}

/** Stop every stream in flight on `port` (all ports when undefined), and any that starts there
 * until `forgetStopped(port)`: generation is cancelled and each stream writes its protocol's
 * terminal error frame. Resolves when they have ended, or after `waitMs`. */
export async function endStreams(port: number | undefined, waitMs = 2000): Promise<void> {
  const err = shuttingDown();
  stoppingPorts.set(port, err);
  const mine = [...live].filter((e) => port === undefined || e.port === port);
  const done = mine.map((e) => new Promise<void>((r) => (e.onDone = r)));
  for (const e of mine) stop(e, err);
  await within(Promise.all(done), waitMs);
}

export function forgetStopped(port: number | undefined): void {
  stoppingPorts.delete(port);
}

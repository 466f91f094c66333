// Streaming responses (SSE for OpenAI / Anthropic, NDJSON for Ollama), written straight to the
// socket: one write per event (no buffering, Nagle off), awaiting 'drain' when the client reads
// slower than we generate, and an AbortSignal that fires when the client goes away so the
// generation behind the stream stops and its lease is released.
import { responseOf, type HttpContext } from "./http-context";
import { traceField, type Span } from "../engines/telemetry";
import type { ServerResponse } from "node:http";
import { Cancellation } from "../engines/chat/cancel";
import { track, untrack, type LiveStream } from "./stream-shutdown";

/** Cancelled when the client disconnects before the response has been fully written. Create it
 * before starting work so a client that leaves during prefill cancels that too. */
export function clientCancellation(ctx: HttpContext): Cancellation {
  const existing = (ctx.state as any).clientCancel as Cancellation | undefined;
  if (existing) return existing;
  const cancel = new Cancellation();
  cancel.requestId = ctx.state.requestId; // carried to the providers' log lines
  (ctx.state as any).clientCancel = cancel;
  const res = responseOf(ctx) as ServerResponse & { [kClientCancel]?: Cancellation };
  // One shared listener (no per-request closure); 'close' is emitted once per response.
  res[kClientCancel] = cancel;
  res.on("close", cancelOnClose);
  // the socket may already be gone (e.g. the client gave up while the body was being read)
  if (res.destroyed || ctx.req.socket?.destroyed) cancelOnClose.call(res);
  return cancel;
}

const kClientCancel = Symbol("clientCancel");

function cancelOnClose(this: ServerResponse & { [kClientCancel]?: Cancellation }): void {
  const cancel = this[kClientCancel];
  if (cancel && !cancel.aborted && !this.writableFinished) cancel.abort(new DOMException("client disconnected", "AbortError"));
}

export const sseData = (data: unknown) => `data: ${JSON.stringify(data)}\n\n`;
export const sseEvent = (event: string, data: unknown) => `event: ${event}\ndata: ${JSON.stringify(data)}\n\n`;
export const ndjsonLine = (data: unknown) => `${JSON.stringify(data)}\n`;

export type StreamFormat = "sse" | "ndjson";

const CONTENT_TYPE: Record<StreamFormat, string> = {
  sse: "text/event-stream; charset=utf-8",
  ndjson: "application/x-ndjson",
};

export class EventStream {
  private readonly res: ServerResponse;
  readonly cancel: Cancellation;

  constructor(ctx: HttpContext, format: StreamFormat, headers: Record<string, string> = {}) {
    this.cancel = clientCancellation(ctx);
    ctx.respond = false; // Koa must not write a body of its own
    this.res = ctx.res;
    ctx.req.socket?.setNoDelay(true);
    const res = this.res;
    // Koa's ctx.set() already put headers (x-request-id, …) on res; add the stream's own.
    for (const [k, v] of Object.entries(headers)) res.setHeader(k, v);
    res.statusCode = 200;
    res.setHeader("content-type", CONTENT_TYPE[format]);
    res.setHeader("cache-control", "no-cache");
    res.setHeader("x-accel-buffering", "no");
    if (format === "sse") res.setHeader("connection", "keep-alive");
    res.flushHeaders();
  }

  /** True once the client went away or the stream was ended. */
  get closed(): boolean {
    return this.cancel.aborted || this.res.writableEnded || this.res.destroyed;
  }

  /** Write one event; resolves when it may be followed by another (after 'drain' if the socket
   * buffer is full). Returns false when the client is gone: stop producing. */
  async write(chunk: string): Promise<boolean> {
    if (this.closed) return false;
    if (this.res.write(chunk)) return true;
    await new Promise<void>((resolve) => {
      const done = () => {
        this.res.off("drain", done);
        this.res.off("close", done);
        resolve();
      };
      this.res.on("drain", done);
      this.res.on("close", done);
    });
    return !this.closed;
  }

  end(chunk?: string): void {
    if (this.res.writableEnded || this.res.destroyed) return;
    if (chunk !== undefined) this.res.end(chunk);
    else this.res.end();
  }

  /** Write a last frame and end, even after generation was cancelled (server stopping); nothing
   * when the client is already gone. */
  finish(chunk?: string): void {
    if (this.res.writableEnded || this.res.destroyed) return;
    if (chunk !== undefined) this.res.end(chunk);
    else this.res.end();
  }

  /** Client gone or unrecoverable: drop the connection. */
  destroy(): void {
    if (!this.res.destroyed) this.res.destroy();
  }
}

/** Whether an error is a cancellation (client disconnect / abort) rather than a failure. */
export function isAbortError(e: unknown, cancel?: { readonly aborted: boolean }): boolean {
  if (cancel?.aborted) return true;
  const name = (e as any)?.name;
  return name === "AbortError" || (e as any)?.code === "ABORT_ERR";
}

/**
 * Start pulling events before anything is written, so that a failure before the first event
 * (model cannot load, prompt too long, …) still becomes a normal HTTP error with its status.
 * Returns the first result and an iterator positioned after it.
 */
export async function peek<T>(source: AsyncIterable<T>): Promise<{ first: IteratorResult<T>; rest: AsyncIterator<T> }> {
  const it = source[Symbol.asyncIterator]();
  try {
    const first = await it.next();
    return { first, rest: it };
  } catch (e) {
    await it.return?.().catch(() => {});
    throw e;
  }
}

/** Re-joins a peeked first result with the rest of its iterator. */
export async function* rejoin<T>(first: IteratorResult<T>, rest: AsyncIterator<T>): AsyncGenerator<T> {
  if (first.done) return;
  // manual loop so that our own `return()` (consumer stopped early) reaches `rest.return()`
  try {
    yield first.value;
    for (;;) {
      const r = await rest.next();
      if (r.done) return;
      yield r.value;
    }
  } finally {
    await rest.return?.().catch(() => {});
  }
}

/**
 * Write every string `chunks` yields to the stream; stop (and cancel the producer through its
 * `return()`) as soon as the client is gone. On a failure after the headers went out, `onError`
 * gives the protocol's in-stream error event, then the stream ends.
 */
export async function pump(
  stream: EventStream,
  chunks: AsyncIterable<string>,
  onError: (e: unknown) => string | undefined,
  log?: (msg: string, fields?: Record<string, unknown>) => void,
  live?: LiveStream,
): Promise<void> {
  try {
    for await (const c of chunks) {
      if (!(await stream.write(c))) break; // leaving the loop calls chunks.return(): generation stops
    }
    if (live?.stopping) return stream.finish(onError(live.stopping));
    stream.end();
  } catch (e) {
    // the server is stopping: the client gets the protocol's terminal error frame, not a cut socket
    if (live?.stopping) return stream.finish(onError(live.stopping));
    if (isAbortError(e, stream.cancel) || stream.closed) {
      stream.destroy();
      return;
    }
    log?.("stream failed", { err: String((e as any)?.stack ?? e) });
    const tail = onError(e);
    if (tail !== undefined) await stream.write(tail);
    stream.end();
  }
}

/** A stream's log with its request's trace id on each line (only a traced request pays a closure). */
function tracedLog(log: StreamOptions<unknown>["log"], span: Span | undefined): StreamOptions<unknown>["log"] {
  if (!log || !span) return log;
  const trace = traceField(span);
  return (msg, fields) => log(msg, { ...fields, ...trace });
}

export interface StreamOptions<E> {
  format: StreamFormat;
  /** headers from the pipeline (x-ratelimit-*, …) */
  headers?: Record<string, string>;
  events: AsyncIterable<E>;
  /** the protocol's stream transform, already serialized (SSE frames or NDJSON lines) */
  render: (events: AsyncIterable<E>) => AsyncIterable<string>;
  /** the protocol's in-stream error frame, for failures after the headers went out */
  onError: (e: unknown) => string | undefined;
  log?: (msg: string, fields?: Record<string, unknown>) => void;
}

/**
 * Stream a generation: wait for its first event (so an early failure is still a plain HTTP
 * error with its status and the protocol's error body), then open the stream and write every
 * frame, stopping generation as soon as the client goes away.
 */
export async function streamEvents<E>(ctx: HttpContext, o: StreamOptions<E>): Promise<void> {
  const live = track(clientCancellation(ctx), ctx.req.socket?.localPort);
  try {
    let peeked: Awaited<ReturnType<typeof peek<E>>>;
    try {
      peeked = await peek(o.events);
    } catch (e) {
      if (live.stopping) throw live.stopping; // nothing sent yet: a plain 503 in the protocol's shape
      if (isAbortError(e, live.cancel)) {
        ctx.respond = false;
        if (!ctx.res.destroyed) ctx.res.destroy();
        return;
      }
      throw e;
    }
    const stream = new EventStream(ctx, o.format, o.headers);
    await pump(stream, o.render(rejoin(peeked.first, peeked.rest)), o.onError, tracedLog(o.log, ctx.state.span), live);
  } finally {
    untrack(live);
  }
}

/** Serialize an object stream with `frame`, then append fixed trailing frames (e.g. [DONE]). */
export async function* frames<T>(items: AsyncIterable<T>, frame: (t: T) => string, ...trailer: string[]): AsyncGenerator<string> {
  for await (const t of items) yield frame(t);
  yield* trailer;
}

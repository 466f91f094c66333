// A request's cancellation (the client went away). One is made per request, so it is cheap:
// an EventEmitter emitting 'abort', which undici accepts as a request signal. A real AbortSignal
// costs microseconds to create and to listen to on Node 20, so one is made only for consumers
// that need it (local inference), through `signal`.
import { EventEmitter } from "node:events";
import type { Span } from "../telemetry";

export class Cancellation extends EventEmitter {
  aborted = false;
  reason: unknown = undefined;
  /** the HTTP request this cancellation belongs to, so an upstream's log lines can name it */
  requestId?: string;
  /** the model call's span while tracing is on: the upstream attempts are its children and
   * carry its traceparent (providers/http.ts) */
  trace?: Span;
  private controller?: AbortController;

  /** An AbortSignal that follows this cancellation (made on first use). */
  get signal(): AbortSignal {
    if (!this.controller) {
      this.controller = new AbortController();
      if (this.aborted) this.controller.abort(this.reason);
    }
    return this.controller.signal;
  }

  abort(reason: unknown = new DOMException("This operation was aborted", "AbortError")): void {
    if (this.aborted) return;
    this.aborted = true;
    this.reason = reason;
    this.controller?.abort(reason);
    this.emit("abort");
  }
}

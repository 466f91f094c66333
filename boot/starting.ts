// The listener's handler while svc loads (boot/start.ts binds before it loads its engines):
// /health answers at once (liveness: the store is open), /ready says what is still loading, and
// every other request waits for the full handler and is then served by it, so a client that
// starts talking as soon as /health answers (the README's walkthrough) is served, not refused.
import type { IncomingMessage, RequestListener, ServerResponse } from "node:http";

/** What is still loading, for /health, /ready and `svc status` (engines/svc.ts: Svc.readiness). */
export interface Readiness {
  /** labels of the start-up steps not done yet; empty once svc is ready */
  loading(): string[];
  /** run a step, listed while it runs */
  step<T>(label: string, fn: () => Promise<T> | T): Promise<T>;
}

export function readiness(): Readiness {
  const pending = new Map<number, string>();
  let seq = 0;
  return {
    loading: () => [...pending.values()],
    async step(label, fn) {
      const id = seq++;
      pending.set(id, label);
      try {
        return await fn();
      } finally {
        pending.delete(id);
      }
    },
  };
}

/** Requests held at most, beyond which a request is told to retry (memory stays bounded). */
const MAX_HELD = 1024;

export interface StartingHandler {
  handler: RequestListener;
  /** the full handler is ready: every later request goes to it, the held ones once `release` resolves */
  ready(full: RequestListener, release?: Promise<unknown>): void;
  /** start-up failed: answer the held requests (and later ones) 503 with the reason */
  failed(reason: string): void;
}

function sendJson(res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
  const text = JSON.stringify(body);
  res.writeHead(status, { "content-type": "application/json; charset=utf-8", "content-length": Buffer.byteLength(text), "cache-control": "no-store", ...headers });
  res.end(text);
}

const LOOPBACK = /^(127\.|::1$|::ffff:127\.)/;

export interface StartingState {
  revision: () => number;
  readiness: Readiness;
  /** GET /admin/config/status's answer from the store (loopback only), so that `svc status`
   * run during start-up shows the objects and what is loading instead of waiting */
  status: () => unknown;
}

export function startingHandler(state: StartingState): StartingHandler {
  let full: RequestListener | undefined;
  let failure: string | undefined;
  const held: Array<[IncomingMessage, ServerResponse]> = [];
  const refuse = (res: ServerResponse, message: string, retry: boolean) =>
    sendJson(res, 503, { error: { message, type: "service_unavailable", code: "starting" } }, retry ? { "retry-after": "1" } : {});

  const handler: RequestListener = (req, res) => {
    if (full) return full(req, res);
    const path = (req.url ?? "/").split("?")[0];
    const get = req.method === "GET" || req.method === "HEAD";
    const loading = state.readiness.loading();
    if (get && path === "/health") return sendJson(res, 200, { status: "ok", revision: state.revision(), ready: false, loading });
    if (get && path === "/ready") return sendJson(res, 503, { ready: false, loading, ...(failure ? { error: failure } : {}) });
    if (get && path === "/admin/config/status" && LOOPBACK.test(req.socket.remoteAddress ?? "")) return sendJson(res, 200, state.status());
    if (failure) return refuse(res, `svc did not start: ${failure}`, false);
    if (held.length >= MAX_HELD) return refuse(res, `svc is starting (still loading: ${loading.join(", ") || "engines"}); retry shortly`, true);
    held.push([req, res]);
  };
  return {
    handler,
    ready(h, release) {
      full = h;
      const serve = () => {
        for (const [req, res] of held.splice(0)) if (!res.destroyed) h(req, res);
      };
      if (release) void release.then(serve, serve);
      else serve();
    },
    failed(reason) {
      failure = reason;
      for (const [, res] of held.splice(0)) if (!res.destroyed && !res.headersSent) refuse(res, `svc did not start: ${reason}`, false);
    },
  };
}

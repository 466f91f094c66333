// The request a piece of engine code is working for, without threading it through every call:
// the HTTP layer enters the scope when a request begins (api/request-id.ts) and log lines deep in
// the providers (a failed upstream, a retry, a cooldown) read its id, so each carries it.
import { AsyncLocalStorage } from "node:async_hooks";

const scope = new AsyncLocalStorage<{ requestId: string }>();

/** From here on (this call and everything it awaits or schedules), work is for `requestId`. */
export function enterRequest(requestId: string): void {
  scope.enterWith({ requestId });
}

/** The id of the request being served, if any (undefined in background work). */
export function currentRequestId(): string | undefined {
  return scope.getStore()?.requestId;
}

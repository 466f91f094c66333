// An inference route: a POST path with one handler, written against HttpContext (which Koa's
// Context also satisfies), served by the lean inference listener (api/inference-listener.ts).
import type { IncomingMessage } from "node:http";
import type { HttpContext } from "./http-context";
import type { ErrorRenderer } from "./errors";

export interface InferenceRoute {
  /** exact path (no parameters); the method is POST */
  path: string;
  /** the protocol's error shape (default OpenAI's) */
  renderError?: ErrorRenderer;
  handle(ctx: HttpContext): Promise<void>;
  /** the handler authenticates the caller itself (a scope other than inference) */
  selfAuthenticating?: boolean;
  /** requests the Koa route of the same path serves instead (e.g. a console session's) */
  viaKoa?(req: IncomingMessage): boolean;
}

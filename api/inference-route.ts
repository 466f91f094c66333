// An inference route: a POST path with one handler, written against HttpContext so that both
// the lean inference listener (api/inference-listener.ts) and Koa can serve it.
import type { HttpContext } from "./http-context";

export interface InferenceRoute {
  /** exact path (no parameters); the method is POST */
  path: string;
  handle(ctx: HttpContext): Promise<void>;
}

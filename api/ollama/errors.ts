// Errors in the Ollama shape {error: "message"} with the HTTP status. An unknown model is a 404
// "model 'x' not found", the message Ollama clients look for.
import type { HttpContext } from "../http-context";
import type { SvcError } from "../../engines/errors";
import { setErrorHead, statusOf } from "../errors";

export function ollamaErrorMessage(ctx: HttpContext, err: SvcError): string {
  const model = (ctx.state as any).jsonBody?.model ?? (ctx.state as any).jsonBody?.name;
  if (statusOf(err) === 404 && typeof model === "string") return `model '${model}' not found`;
  return err.message;
}

export function renderOllama(ctx: HttpContext, err: SvcError): void {
  setErrorHead(ctx, err);
  ctx.body = { error: ollamaErrorMessage(ctx, err) };
}

// Errors in the Ollama shape {error: "message"} with the HTTP status. An unknown model is a 404
// "model 'x' not found", the message Ollama clients look for.
import type { HttpContext } from "../http-context";
import type { GatewayError } from "../../engines/gateway/errors";

export function ollamaErrorMessage(ctx: HttpContext, err: GatewayError): string {
  const model = (ctx.state as any).jsonBody?.model ?? (ctx.state as any).jsonBody?.name;
  if (err.status === 404 && typeof model === "string") return `model '${model}' not found`;
  return err.message;
}

export function renderOllama(ctx: HttpContext, err: GatewayError): void {
  ctx.status = err.status;
  for (const [k, v] of Object.entries(err.headers)) ctx.set(k, v);
  ctx.body = { error: ollamaErrorMessage(ctx, err) };
}

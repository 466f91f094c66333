// Azure OpenAI request: the OpenAI chat body (openai.ts) posted to the model's deployment,
//   {endpoint}/openai/deployments/{deployment}/chat/completions?api-version=…
// with the credential as the `api-key` header, or as an Entra ID bearer token (auth: entra-id).
// The deployment, not the body's model, picks the model; the body's model is left out.
import type { ChatRequest } from "../../chat/types";
import { toOpenAIBody } from "../openai";
import type { RouteTarget } from "../types";

export const AZURE_DEFAULT_API_VERSION = "2024-10-21";

export function azurePath(t: RouteTarget): string {
  const deployment = t.vendor?.deployment ?? t.upstreamModel;
  const version = t.vendor?.apiVersion ?? AZURE_DEFAULT_API_VERSION;
  return `/openai/deployments/${encodeURIComponent(deployment)}/chat/completions?api-version=${encodeURIComponent(version)}`;
}

export function azureHeaders(t: RouteTarget): Record<string, string> {
  const h: Record<string, string> = { ...(t.headers ?? {}) };
  if (t.credential) {
    if (t.vendor?.auth === "entra-id") h.authorization = `Bearer ${t.credential}`;
    else h["api-key"] = t.credential;
  }
  return h;
}

export function toAzureBody(t: RouteTarget, req: ChatRequest): Record<string, unknown> {
  const body = toOpenAIBody(t, req);
  delete body.model;
  return body;
}

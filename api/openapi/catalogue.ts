// Every HTTP route svc serves, as the OpenAPI document lists it. A test compares this with the
// routers' own tables, so a route added without a line here (or a line left after its route
// went) fails the build. Paths are written as the routers write them (`:id`).
import type { TSchema } from "@sinclair/typebox";
import * as B from "../../schemas/api/bodies";
import * as P from "../../schemas/api/pairing";
import * as M from "../../schemas/api/media";
import { OllamaDeleteBody, OllamaPullBody } from "../../schemas/api/models";
import { CreateBody, PatchBody, TemporaryBody } from "../../engines/gateway/key-bodies";
import { CachePurgeBody } from "../../schemas/api/cache";

/** Who may call: a key (or anonymous loopback where the Server allows it), loopback only, anyone. */
export type Access = "key" | "admin" | "loopback" | "public";

export interface RouteDoc {
  method: "get" | "post" | "patch" | "delete" | "all";
  path: string;
  tag: string;
  summary: string;
  access: Access;
  /** the JSON body's schema: the route validates with this very object (api/body-schema.ts) */
  body?: TSchema;
  /** the body may be left out (read as {}) */
  bodyOptional?: boolean;
  /** the body is forwarded to a provider as sent (JSON or multipart/form-data), not validated */
  forwarded?: TSchema;
  /** answers a stream (SSE or NDJSON) when the body asks for one */
  streams?: boolean;
  /** how a keyed route meets the gate (engines/gateway/gate.ts): "call", each request is one
   * metered call (key use, policy, rate limits, max_requests, budgets, audit); "use", the key is
   * authenticated and its use judged (IP allowlist, scope, access level) and the route shows or
   * changes only what that key may see (listings filtered by its policy, its own usage, audit
   * and keys), spending no limit. Required for access "key": the server refuses to start with a
   * keyed route that does not say (api/route-table.ts), and test/gateway/every-route.test.ts
   * sends refused keys to every keyed route by this table. */
  gate?: "call" | "use";
}

const r = (method: RouteDoc["method"], path: string, tag: string, summary: string, access: Access, more: Partial<RouteDoc> = {}): RouteDoc => ({ method, path, tag, summary, access, ...more });

export const routeDocs: RouteDoc[] = [
  r("get", "/health", "health", "Reachability (answers as soon as svc listens; `ready` and `loading` say what start-up still loads)", "public"),
  r("get", "/ready", "health", "Readiness: 200 once start-up has loaded everything, else 503 with what is still loading", "public"),
  r("get", "/", "health", "Liveness text (Ollama's probe)", "public"),
  r("get", "/metrics", "operations", "Prometheus metrics (loopback, the admin key, or metrics.public)", "loopback"),

  r("get", "/v1/models", "openai", "Model identifiers, OpenAI-style", "key", { gate: "use" }),
  r("get", "/v1/models/:id", "openai", "One model", "key", { gate: "use" }),
  r("post", "/v1/chat/completions", "openai", "Chat Completions", "key", { gate: "call", body: B.ChatCompletionBody, streams: true }),
  r("post", "/v1/completions", "openai", "Text completions", "key", { gate: "call", body: B.CompletionBody, streams: true }),
  r("post", "/v1/responses", "openai", "Responses", "key", { gate: "call", body: B.ResponsesBody, streams: true }),
  r("post", "/v1/embeddings", "openai", "Embeddings", "key", { gate: "call", body: B.EmbeddingsBody }),
  r("post", "/v1/messages", "anthropic", "Messages", "key", { gate: "call", body: B.MessagesBody, streams: true }),
  r("post", "/v1/messages/count_tokens", "anthropic", "Count the tokens of a Messages request", "key", { gate: "call", body: B.CountTokensBody }),
  r("post", "/api/chat", "ollama", "Ollama chat", "key", { gate: "call", body: B.OllamaChatBody, streams: true }),
  r("post", "/api/generate", "ollama", "Ollama generation", "key", { gate: "call", body: B.OllamaGenerateBody, streams: true }),
  r("post", "/api/embed", "ollama", "Ollama embeddings", "key", { gate: "call", body: B.OllamaEmbedBody }),
  r("post", "/api/embeddings", "ollama", "Ollama embeddings (legacy shape)", "key", { gate: "call", body: B.OllamaEmbeddingsBody }),
  r("post", "/api/show", "ollama", "Model metadata and capabilities", "key", { gate: "use", body: B.ShowBody }),
  r("get", "/api/tags", "ollama", "Model list, Ollama-style", "key", { gate: "use" }),
  r("get", "/v1/tags", "ollama", "Model list, Ollama-style", "key", { gate: "use" }),
  r("get", "/api/ps", "ollama", "Loaded local models", "key", { gate: "use" }),
  r("post", "/api/pull", "ollama", "Download a model (hf.co/<user>/<repo>:<quant>, hf: URI or URL), NDJSON progress; loopback or the admin key, audited", "admin", { body: OllamaPullBody, streams: true }),
  r("delete", "/api/delete", "ollama", "Delete a pulled model and its files; loopback or the admin key, audited", "admin", { body: OllamaDeleteBody }),
  r("get", "/api/version", "ollama", "Version, Ollama-style", "public"),

  r("post", "/v1/api-keys", "keys", "Create a key (its secret is returned once)", "key", { gate: "use", body: CreateBody }),
  r("get", "/v1/api-keys", "keys", "List keys", "key", { gate: "use" }),
  r("get", "/v1/api-keys/:id", "keys", "One key", "key", { gate: "use" }),
  r("patch", "/v1/api-keys/:id", "keys", "Change a key (JSON merge patch)", "key", { gate: "use", body: PatchBody }),
  r("delete", "/v1/api-keys/:id", "keys", "Revoke a key", "key", { gate: "use" }),
  r("post", "/v1/api-keys/temporary", "keys", "Create a temporary key (master key)", "key", { gate: "use", body: TemporaryBody }),
  r("get", "/v1/audit-logs", "audit", "Audit log entries, newest first (X-API-Key-ID selects the key)", "key", { gate: "use" }),
  r("get", "/v1/usage", "audit", "Usage grouped by key, team, organization, model, provider, day, hour or metadata (?group_by, from, to, filters; CSV with format=csv)", "key", { gate: "use" }),

  r("get", "/console", "console", "The web console (static files under /console/)", "public"),
  r("post", "/console/session", "console", "Sign in with a key: an HttpOnly, SameSite=Strict session cookie", "public", { body: P.ConsoleSignInBody }),
  r("post", "/console/session/loopback", "console", "Sign in without a key on unauthenticated loopback", "loopback"),
  r("get", "/console/session", "console", "The signed-in key's identity, rights and CSRF token", "key", { gate: "use" }),
  r("delete", "/console/session", "console", "Sign out", "key", { gate: "use" }),

  r("get", "/agents", "agents", "Custom agents with metadata and readiness", "key", { gate: "use" }),
  r("post", "/agents/:id/run", "agents", "Run an agent loop within the request", "key", { gate: "call", body: B.AgentRunBody, streams: true }),
  r("post", "/agents/:id/dispatch", "agents", "Start a detached task", "key", { gate: "call", body: B.DispatchBody }),
  r("get", "/tasks", "agents", "List tasks (newest first; filter by agent and status; cursor paging)", "key", { gate: "use" }),
  r("get", "/tasks/:id", "agents", "Inspect a task", "key", { gate: "use" }),
  r("delete", "/tasks/:id", "agents", "Request a task's cancellation", "key", { gate: "use" }),
  r("post", "/tasks/:id/clarify", "agents", "Answer a task's pending question or approval", "key", { gate: "use", body: B.ClarifyBody }),

  r("get", "/mcp/health", "tools", "Availability of the MCP HTTP surface", "key", { gate: "use" }),
  r("get", "/mcp/tools", "tools", "Enabled tools allowed for external callers", "key", { gate: "use" }),
  r("post", "/mcp/call", "tools", "Call an exposed tool", "key", { gate: "call", body: B.ToolCallBody }),
  r("all", "/mcp", "tools", "svc as an MCP server (Streamable HTTP)", "key", { gate: "call" }),

  r("post", "/memory/ingest", "memory", "Ingest turns into an agent's memory", "key", { gate: "call", body: B.MemoryIngestBody }),
  r("post", "/memory/flush", "memory", "Distill pending sessions now", "key", { gate: "call", body: B.MemoryFlushBody }),
  r("get", "/memory/search", "memory", "Search one agent's memory", "key", { gate: "call" }),
  r("get", "/memory/recall", "memory", "The recall an agent's run would get", "key", { gate: "call" }),
  r("get", "/memory/status", "memory", "Memory counters", "key", { gate: "call" }),
  r("get", "/memory/runs", "memory", "Recent distillation and maintenance runs", "key", { gate: "call" }),
  r("get", "/memory/dead-letters", "memory", "Extractions that failed for good", "key", { gate: "call" }),
  r("post", "/memory/dead-letters/:id/retry", "memory", "Retry a dead letter", "key", { gate: "call" }),
  r("post", "/memory/consolidate", "memory", "Run maintenance now", "key", { gate: "call", body: B.AgentOnlyBody }),
  r("delete", "/memory/agents/:id", "memory", "Purge an agent's memory", "key", { gate: "call" }),
  r("delete", "/memory/agents/:id/index", "memory", "Remove an agent's search index", "key", { gate: "call" }),
  r("post", "/memory/agents/:id/index/rebuild", "memory", "Rebuild an agent's search index", "key", { gate: "call" }),

  r("post", "/v1/audio/transcriptions", "media", "Speech transcription", "key", { gate: "call", forwarded: M.ForwardedBody }),
  r("get", "/v1/images/models", "media", "Image-capable models", "key", { gate: "use" }),
  r("post", "/v1/images/generations", "media", "Image generation", "key", { gate: "call", forwarded: M.ForwardedBody }),
  r("post", "/v1/images/edits", "media", "Image editing", "key", { gate: "call", forwarded: M.ForwardedBody }),
  r("post", "/v1/images/upscale", "media", "Image upscaling", "key", { gate: "call", forwarded: M.ForwardedBody }),
  r("post", "/v1/images/cancel", "media", "Cancel an image job", "key", { gate: "use", body: M.JobIdBody }),
  r("post", "/v1/videos/quote", "media", "Cloud video quote", "key", { gate: "call", body: M.VideoBody }),
  r("post", "/v1/videos/generations", "media", "Start a quoted video job", "key", { gate: "call", body: M.VideoBody }),
  r("get", "/v1/videos/jobs/:id", "media", "Video-job state", "key", { gate: "use" }),
  r("get", "/v1/videos/jobs/:id/content", "media", "Completed video", "key", { gate: "use" }),
  r("get", "/credits/balance", "media", "Balance of the configured cloud service", "key", { gate: "use" }),

  r("get", "/admin/config/export", "admin", "Desired state without secrets (?format=yaml|json)", "admin"),
  r("get", "/admin/config/schema", "admin", "JSON Schema of every kind (?format=yaml|json)", "admin"),
  r("get", "/admin/config/status", "admin", "Every object with its Ready condition", "admin"),
  r("post", "/admin/config/plan", "admin", "Validate and preview a document", "admin", { body: B.ConfigBody }),
  r("post", "/admin/config/apply", "admin", "Apply a document or a saved plan", "admin", { body: B.ConfigBody }),
  r("get", "/admin/cache-stats", "admin", "Cache counters", "admin"),
  r("get", "/admin/response-cache", "admin", "Response cache: entries, hits, misses, spend saved (docs/cache.md)", "admin"),
  r("post", "/admin/response-cache/purge", "admin", "Drop cached answers of a model, a key, or all", "admin", { body: CachePurgeBody }),
  r("get", "/admin/generation-settings", "admin", "Effective generation settings", "admin"),
  r("get", "/admin/runtime-settings", "admin", "Effective runtime settings", "admin"),

  r("get", "/pair/challenge", "pairing", "A single-use pairing challenge", "public"),
  r("post", "/pair", "pairing", "Answer a challenge (a pending pairing request)", "public", { body: P.PairBody }),
  r("get", "/pair/hello", "pairing", "Poll a pairing request", "public"),
  r("post", "/pair/hello", "pairing", "Poll a pairing request", "public", { body: P.PairHelloBody }),
  r("post", "/pair/code", "pairing", "Pair with a 6-digit code (or, on the host, make one)", "public", { body: P.PairCodeBody, bodyOptional: true }),
  r("post", "/pair/unpair", "pairing", "Unpair a device", "key", { gate: "use", body: P.UnpairBody, bodyOptional: true }),
  r("post", "/pair-invite", "pairing", "Accept a signed invite (or, on the host, make one)", "public", { body: P.PairInviteBody, bodyOptional: true }),
  r("get", "/pair/requests", "pairing", "Pending pairing requests (the host)", "loopback"),
  r("post", "/pair/requests/:id/approve", "pairing", "Approve a pairing request (the host)", "loopback", { body: P.ApproveBody, bodyOptional: true }),
  r("post", "/pair/requests/:id/deny", "pairing", "Deny a pairing request (the host)", "loopback"),
  r("get", "/pair/devices", "pairing", "Paired devices (the host)", "loopback"),
  r("post", "/secure/session", "pairing", "Open a secure-channel session", "key", { gate: "use", body: P.SecureSessionBody }),
  // the channel's own request carries no key: the inner request carries its key and meets the gate in the dispatch
  r("post", "/secure/call", "pairing", "One encrypted inner request (it carries its own key)", "public", { body: P.SecureCallBody }),

  r("get", "/openapi.json", "health", "This document", "public"),
];

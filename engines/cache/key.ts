// The cache key: a digest of the normalised request (model after routing, messages, tools,
// sampling, response format, seed, output bound) and the scope it may answer. What does not
// change the answer (stream, session, metadata, attribution) is left out, so a streamed request
// hits an answer stored by a non-streamed one and the other way round.
import { createHash } from "node:crypto";
import type { ChatRequest, EmbeddingRequest } from "../chat/types";
import type { CacheScope } from "./types";

/** JSON with object keys sorted, so two equal requests give one text whatever their key order. */
export function stableJson(v: unknown): string {
  if (v === null || typeof v !== "object") return JSON.stringify(v) ?? "null";
  if (Array.isArray(v)) return `[${v.map((x) => (x === undefined ? "null" : stableJson(x))).join(",")}]`;
  const o = v as Record<string, unknown>;
  const keys = Object.keys(o).filter((k) => o[k] !== undefined).sort();
  return `{${keys.map((k) => `${JSON.stringify(k)}:${stableJson(o[k])}`).join(",")}}`;
}

/** The scope an entry is filed under for this caller: a cache never answers across it. */
/** The caller as the cache sees it (a gateway key's id and hierarchy; null: anonymous loopback). */
export interface ScopeHolder {
  id: string;
  spec: { organization_id?: string; team_id?: string };
}

export function scopeOf(scope: CacheScope, key: ScopeHolder | null): string {
  if (scope === "global") return "global";
  if (!key) return "anonymous"; // unauthenticated loopback callers share one scope
  const org = key.spec.organization_id;
  if (scope === "organization" && org) return `org:${org}`;
  if (scope === "team" && key.spec.team_id) return `team:${org ?? ""}:${key.spec.team_id}`;
  return `key:${key.id}`;
}

function digest(kind: string, scope: string, model: string, body: unknown): string {
  return createHash("sha256").update(`${kind}\n${scope}\n${model}\n${stableJson(body)}`).digest("hex");
}

export function chatKey(req: ChatRequest, model: string, scope: string): string {
  const messages = req.messages.map((m) => ({ role: m.role, content: m.content, parts: m.parts, toolCalls: m.toolCalls, toolCallId: m.toolCallId, name: m.name }));
  return digest("chat", scope, model, {
    messages,
    prompt: req.prompt,
    maxTokens: req.maxTokens,
    sampling: req.sampling,
    tools: req.tools,
    toolChoice: req.toolChoice,
    responseSchema: req.responseSchema,
  });
}

export function embedKey(req: EmbeddingRequest, model: string, scope: string): string {
  return digest("embed", scope, model, req.input);
}

// The cache key: the normalised request (model after routing, messages, tools, sampling,
// response format, seed, output bound) and the scope it may answer, as one text. What does not
// change the answer (stream, session, metadata, attribution) is left out, so a streamed request
// hits an answer stored by a non-streamed one and the other way round. The in-memory tier is
// keyed by the text itself; the stores by its SHA-256 (`digestOf`), computed only past that tier.
import { createHash } from "node:crypto";
import type { ChatRequest, EmbeddingRequest, SamplingOverrides } from "../chat/types";
import type { CacheScope } from "./types";

/** JSON with object keys sorted, so two equal requests give one text whatever their key order. */
export function stableJson(v: unknown): string {
  if (v === null || typeof v !== "object") return JSON.stringify(v) ?? "null";
  if (Array.isArray(v)) return `[${v.map((x) => (x === undefined ? "null" : stableJson(x))).join(",")}]`;
  const o = v as Record<string, unknown>;
  const keys = Object.keys(o).filter((k) => o[k] !== undefined).sort();
  return `{${keys.map((k) => `${JSON.stringify(k)}:${stableJson(o[k])}`).join(",")}}`;
}

/** The caller as the cache sees it (a gateway key's id and hierarchy; null: anonymous loopback). */
export interface ScopeHolder {
  id: string;
  /** "admin" / "master" for the special keys, "key" for ApiKey objects */
  role?: string;
  spec: { organization_id?: string; team_id?: string };
}

/** The scope an entry is filed under for this caller: a cache never answers across it. */
export function scopeOf(scope: CacheScope, key: ScopeHolder | null): string {
  if (scope === "global") return "global";
  if (!key) return "anonymous"; // unauthenticated loopback callers share one scope
  const org = key.spec.organization_id;
  // Ids are free strings (':' allowed), so they are JSON-encoded: a plain `team:${org}:${team}`
  // made org "acme:x"/team "y" and org "acme"/team "x:y" one scope (another organization's answers).
  if (scope === "organization" && org) return `org:${JSON.stringify(org)}`;
  if (scope === "team" && key.spec.team_id) return `team:${JSON.stringify([org ?? "", key.spec.team_id])}`;
  // the administrative key's id ("admin") is also a valid ApiKey object name: keep the special
  // keys apart from an ApiKey that happens to share the id
  if (key.role !== undefined && key.role !== "key") return `special:${JSON.stringify(key.role)}`;
  return `key:${JSON.stringify(key.id)}`;
}

export function digestOf(text: string): string {
  return createHash("sha256").update(text).digest("hex");
}

const opt = <T>(v: T | undefined): T | null => (v === undefined ? null : v);
/** A nested value the caller wrote (schemas, tool choice, image parts): key order normalised. */
const nested = (v: unknown): string | null => (v === undefined ? null : stableJson(v));

// The shapes svc builds itself (messages, sampling) have known fields: a fixed-order array of
// them is one native JSON.stringify, several times cheaper than sorting keys at every level.
const samplingOf = (s: SamplingOverrides) => [opt(s.temperature), opt(s.topP), opt(s.topK), opt(s.minP), opt(s.seed), opt(s.repeatPenalty), opt(s.stop)];

/** `outputCap`: the key's per_request_max when the request sets no max_tokens: the gateway then
 * sends max_tokens = per_request_max - prompt upstream (pipeline.ts), an answer that may be cut
 * short, so it is filed apart from the uncapped request's (and from an explicit max_tokens). */
export function chatKeyText(req: ChatRequest, model: string, scope: string, outputCap?: number): string {
  const messages = req.messages.map((m) => [m.role, m.content, nested(m.parts), m.toolCalls === undefined ? null : m.toolCalls.map((c) => [c.id, c.name, c.arguments]), opt(m.toolCallId), opt(m.name)]);
  const maxTokens = req.maxTokens === undefined && outputCap !== undefined ? ["per_request_max", outputCap] : opt(req.maxTokens);
  return JSON.stringify(["chat", scope, model, messages, opt(req.prompt), maxTokens, samplingOf(req.sampling), nested(req.tools), nested(req.toolChoice), nested(req.responseSchema)]);
}

export function embedKeyText(req: EmbeddingRequest, model: string, scope: string): string {
  return JSON.stringify(["embed", scope, model, req.input]);
}

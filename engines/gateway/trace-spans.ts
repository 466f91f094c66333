// What the gate's calls put on their spans (docs/observability.md has the table): the GenAI
// conventions' attributes for model calls (gen_ai.*), svc's own under svc.* (the key's id, never
// its secret; organization, team and user; the policy decision; the limit that refused; cost and
// currency; fallback). Spans exist only while tracing is on (engines/telemetry): a call site
// reaches here only when the request carries a span (Caller.trace).
import { attr, tracing, type Span } from "../telemetry";
import { SvcError } from "../errors";
import type { ChatRequest } from "../chat/types";
import type { Caller } from "./pipeline-types";
import type { RouteTarget } from "../providers/types";
import type { KeyEntry } from "./keys";
import { keyCurrency } from "./limits/currency";
import { redactSecrets } from "../secrets/redact";

// the parts of gate-ledger.ts's GateCall, Verdict and Outcome read here (it imports this file)
interface Call { action: string; audit: string; model?: string; provider?: string; resource?: string }
interface Ended { key: KeyEntry | null; call: Call; adm?: unknown; span?: Span }
interface Result { status: string; provider?: string; promptTokens?: number; completionTokens?: number; usdMicros?: number; finishReason?: string }

/** gen_ai.provider.name for a provider type (the conventions' well-known values). */
const GENAI_PROVIDER: Record<string, string> = {
  openai: "openai",
  anthropic: "anthropic",
  bedrock: "aws.bedrock",
  gemini: "gcp.gemini",
  vertex: "gcp.vertex_ai",
  "azure-openai": "azure.ai.openai",
  ollama: "ollama",
  local: "svc.local",
};

/** The key's attributes, set on the span directly (a spread of them into a larger literal made a
 * slow dictionary object per call, which showed in profiles). */
function setKeyAttrs(span: Span, key: KeyEntry | null): void {
  if (!key) return;
  span.setAttribute("svc.key.id", key.id);
  const s = key.spec;
  if (s.organization_id) span.setAttribute("svc.organization.id", s.organization_id);
  if (s.team_id) span.setAttribute("svc.team.id", s.team_id);
  if (s.user_id) span.setAttribute("svc.user.id", s.user_id);
}

/** The `chat` (or `text_completion`) span of a model call, a child of the request's span. */
export function chatSpan(parent: Span, _caller: Caller, req: ChatRequest): Span {
  const op = req.prompt !== undefined && req.messages.length === 0 ? "text_completion" : "chat";
  const sp = tracing.spans!;
  const span = sp.child(parent, `${op} ${req.model}`, "internal");
  if (!span.isRecording()) return span; // sampled out: the helpers below skip it too
  span.setAttribute("gen_ai.operation.name", op);
  span.setAttribute("gen_ai.request.model", req.model);
  attr(span, "gen_ai.request.max_tokens", req.maxTokens);
  attr(span, "gen_ai.request.temperature", req.sampling.temperature);
  attr(span, "gen_ai.request.top_p", req.sampling.topP);
  if (req.stream === true) span.setAttribute("svc.stream", true); // only when streamed: each attribute costs twice (set, serialised)
  attr(span, "svc.agent.id", req.agentId);
  if (sp.content) {
    // a legacy completion's prompt is its one user message
    const input = op === "text_completion" ? [{ role: "user", content: req.prompt }] : req.messages.map((m) => ({ role: m.role, content: m.content }));
    span.setAttribute("gen_ai.input.messages", redactSecrets(JSON.stringify(input)));
  }
  return span;
}

/** Where a chat's answer text gathers while its span records content (off unless configured:
 * then no array is made and nothing is kept). */
export function outputTally(span: Span | undefined): string[] | undefined {
  return span?.isRecording() && tracing.spans?.content ? [] : undefined;
}

/** The answer as the chat span's gen_ai.output.messages, redacted like the prompt (streamed
 * answers too: the pieces gathered as they went through). */
export function recordOutput(span: Span, text: string[], finish: string | undefined): void {
  span.setAttribute("gen_ai.output.messages", redactSecrets(JSON.stringify([{ role: "assistant", content: text.join(""), ...(finish ? { finish_reason: finish } : {}) }])));
}

/** The span of a gate call that is not a chat (embeddings, tools, memory, media, dispatch). */
export function callSpan(parent: Span, c: Call): Span {
  const tool = c.resource?.startsWith("tool:") ? c.resource.slice(5) : undefined;
  const name = tool ? `execute_tool ${tool}` : c.action === "embeddings" ? `embeddings ${c.model}` : c.audit;
  return tracing.spans!.child(parent, name, "internal", {
    "gen_ai.operation.name": tool ? "execute_tool" : c.action === "embeddings" ? "embeddings" : undefined,
    "gen_ai.tool.name": tool,
    "gen_ai.request.model": c.model,
    "svc.action": c.action,
  });
}

/** Chat spans whose call moved past its first candidate: svc.fallback is set when the call ends,
 * and only if a candidate served (endCallSpan), not when every one failed (failCallSpan). */
const fellBack = new WeakSet<Span>();

/** A chat's attempt moved on to another target (fallback or a routed deployment). svc.provider is
 * set when the call ends (the deployment that served or failed last), svc.attempts only past one. */
export function attemptSpan(span: Span, t: RouteTarget, attempt: number): void {
  if (!span.isRecording()) return;
  span.setAttribute("gen_ai.provider.name", GENAI_PROVIDER[t.type] ?? t.type);
  span.setAttribute("gen_ai.response.model", t.upstreamModel);
  if (attempt > 0) {
    span.setAttribute("svc.attempts", attempt + 1);
    // svc.fallback means "a later candidate served" (docs/observability.md): set at the end, once
    // it is known whether one did; set here it also marked fallbacks that every candidate failed
    fellBack.add(span);
  }
}

/** An admitted call ended (Gate's finish). */
export function endCallSpan(v: Ended, o: Result, costMicros: number): void {
  const span = v.span!;
  v.span = undefined; // ended once
  if (!span.isRecording()) return; // sampled out: nothing to record or end
  const ok = o.status === "success" || o.status === "tool_error";
  const model = o.usdMicros !== undefined; // a model call
  const charged = v.key && v.adm ? keyCurrency(v.key) : undefined; // the key's currency, when it was charged
  setKeyAttrs(span, v.key);
  span.setAttribute("svc.policy.decision", "allow");
  attr(span, "svc.provider", o.provider ?? v.call.provider);
  if (fellBack.delete(span)) span.setAttribute("svc.fallback", true); // a chat's answer came from a later candidate
  if (model) {
    attr(span, "gen_ai.usage.input_tokens", o.promptTokens);
    attr(span, "gen_ai.usage.output_tokens", o.completionTokens);
  }
  if (o.finishReason) span.setAttribute("gen_ai.response.finish_reasons", [o.finishReason]);
  if (charged) {
    span.setAttribute("svc.cost", costMicros / 1e6);
    span.setAttribute("svc.currency", charged);
  }
  // in USD too when the key is charged in another currency (or not charged: no key)
  if (o.usdMicros !== undefined && charged !== "USD") span.setAttribute("svc.cost_usd", o.usdMicros / 1e6);
  if (!(ok && o.status === "success")) span.setAttribute("svc.status", o.status); // not a success: which outcome
  tracing.spans!.end(span, undefined, ok || o.status === "cancelled" ? undefined : { code: o.status });
}

/** A refused or failed call: error.type, and which limit or policy refused it. */
export function failCallSpan(v: Ended, e: unknown): void {
  const span = v.span!;
  v.span = undefined;
  fellBack.delete(span); // no candidate served: no svc.fallback
  if (!span.isRecording()) return;
  const refusedBy = e instanceof SvcError ? e.kind : undefined;
  setKeyAttrs(span, v.key);
  tracing.spans!.end(
    span,
    {
      "svc.provider": v.call.provider,
      "svc.policy.decision": refusedBy === "forbidden" ? "deny" : v.adm || refusedBy === "rate_limited" || refusedBy === "payment" ? "allow" : undefined,
      "svc.limit": e instanceof SvcError ? e.limit.window : undefined,
    },
    e,
  );
}

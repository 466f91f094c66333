// Memory's own model calls (extraction, embeddings, token counting) through the gateway's
// internal entry point, the one the agent loop uses (InferencePipeline.chat / embed). They are
// svc's own background work: made as internal loopback with no key (no key's limits or budget
// apply; the caller whose turn it was is long gone when a debounce fires). A call made for an
// agent's run (recall's query vector, a written turn's vectors) is a child of that run's memory
// span while tracing is on, so it is in the run's (or task's) trace.
import { randomBytes } from "node:crypto";
import type { Host } from "../host";
import type { Gateway } from "../gateway";
import type { ModelPool } from "../inference/pool";

/** What memory's model calls use: the gateway (remote models) and the local pool. */
export type MemoryHost = Host & { engines: { gateway?: Gateway; pool?: ModelPool } };
import type { Caller } from "../gateway/pipeline-types";
import type { ChatRequest } from "../chat/types";
import { Cancellation } from "../chat/cancel";
import { collectChat } from "../chat/collect";
import { estimateTextTokens } from "../providers/estimate";
import type { Span } from "../telemetry";

const internalCaller = (what: string, trace?: Span): Caller => ({
  ip: "127.0.0.1",
  loopback: true,
  requestId: `mem_${randomBytes(8).toString("hex")}`,
  route: `memory/${what}`,
  userAgent: "svc-memory",
  key: null,
  trace,
});

export class GatewayCalls {
  constructor(private readonly svc: MemoryHost) {}

  /** One non-streaming chat call; the whole answer text. */
  async chat(req: ChatRequest): Promise<string> {
    const gw = this.svc.engines.gateway;
    if (!gw) throw Object.assign(new Error("the gateway engine is not running"), { code: "gateway_unavailable" });
    const start = await gw.pipeline.chat(internalCaller("distill"), req, new Cancellation());
    return (await collectChat(start.events)).text;
  }

  /** Embed texts with the configured model (null when it cannot be done). */
  async embed(model: string, input: string[], trace?: Span): Promise<Float32Array[]> {
    const gw = this.svc.engines.gateway;
    if (!gw) throw new Error("the gateway engine is not running");
    const r = await gw.pipeline.embed(internalCaller("embed", trace), { model, input });
    return r.vectors.map((v) => Float32Array.from(v));
  }

  /** A token counter for `model`: its own tokenizer when it is a local GGUF, else the gateway's
   * upper-bound estimate (OpenAI-compatible APIs have no counting endpoint). */
  counter(model: string): { source: "tokenizer" | "estimate"; count: (text: string) => Promise<number> } {
    const t = this.svc.engines.gateway?.router.targets(model)[0];
    const pool = this.svc.engines.pool;
    if (t?.type === "local" && pool) return { source: "tokenizer", count: (text) => pool.countTokens(t.upstreamModel, text) };
    return { source: "estimate", count: async (text) => estimateTextTokens(text) };
  }
}

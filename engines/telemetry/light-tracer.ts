// The OpenTelemetry API's Tracer for svc's OTLP http/protobuf pipeline, starting light spans
// (light-span.ts) as the SDK's tracer starts its own: the parent from the context (none, or a
// suppressed context: no recording), a new trace id for a root, svc's pooled ids (light-ids.ts)
// and the configured sampler's decision (OTEL_TRACES_SAMPLER(_ARG) or the manifest's ratio), a
// non-recording span when not sampled (LightUnsampled, whose children are left out as the samplers
// would leave them, without asking again). What it leaves out is the SDK's per-span bookkeeping
// that nothing in svc reads (span start hooks of other processors, the tracer's own metrics).
import {
  INVALID_SPAN_CONTEXT,
  SamplingDecision,
  SpanKind,
  TraceFlags,
  context as apiContext,
  trace,
  type Context,
  type Span,
  type SpanContext,
  type SpanOptions,
  type Tracer,
} from "@opentelemetry/api";
import { isTracingSuppressed } from "@opentelemetry/core";
import { AlwaysOffSampler, AlwaysOnSampler, ParentBasedSampler, TraceIdRatioBasedSampler, type IdGenerator, type Sampler } from "@opentelemetry/sdk-trace-base";
import { LightSpan, LightUnsampled, type LightOwner } from "./light-span";
import { PooledIds } from "./light-ids";

/** The limits a span keeps (the SDK's SpanLimits, resolved from OTEL_* as its provider does). */
export interface LightLimits {
  attributeCountLimit?: number;
  attributeValueLengthLimit?: number;
  eventCountLimit?: number;
  linkCountLimit?: number;
}

const NO_ATTRIBUTES = Object.freeze({});
const NO_LINKS: [] = [];

export class LightTracer implements Tracer, LightOwner {
  readonly countLimit: number;
  readonly lengthLimit: number;
  readonly eventLimit: number;
  readonly linkLimit: number;

  constructor(
    private readonly sampler: Sampler,
    private readonly ids: IdGenerator,
    limits: LightLimits,
    /** the span processor's entry for an ended span */
    readonly ended: (span: LightSpan) => void,
  ) {
    this.countLimit = limits.attributeCountLimit ?? 128;
    this.lengthLimit = limits.attributeValueLengthLimit ?? Infinity;
    this.eventLimit = limits.eventCountLimit ?? 128;
    this.linkLimit = limits.linkCountLimit ?? 128;
    this.childrenFollow = sampler instanceof ParentBasedSampler || sampler instanceof AlwaysOnSampler || sampler instanceof TraceIdRatioBasedSampler;
    this.unsampledFollow = sampler instanceof ParentBasedSampler || sampler instanceof AlwaysOffSampler || sampler instanceof TraceIdRatioBasedSampler;
    this.pooled = ids instanceof PooledIds ? ids : undefined;
  }

  /** the ids' generator when it is svc's pooled one: spans then keep their ids' bytes */
  private readonly pooled: PooledIds | undefined;

  /** Whether the sampler samples every child of a sampled local parent: the SDK's built-in
   * samplers, the ones OTEL_TRACES_SAMPLER and the manifest's ratio configure, do (a parent-based
   * one by default, always-on always, a ratio one by the trace id its root was sampled by). */
  private readonly childrenFollow: boolean;

  /** Whether the sampler leaves every child of an unsampled local parent unsampled: a parent-based
   * one by default (a local parent not sampled: always off), always-off always, a ratio one by the
   * trace id that left its root out. Not always-on, which samples a child whatever its parent. */
  private readonly unsampledFollow: boolean;

  startSpan(name: string, options: SpanOptions = {}, ctx: Context = apiContext.active()): Span {
    if (options.root) ctx = trace.deleteSpan(ctx);
    if (isTracingSuppressed(ctx)) return trace.wrapSpanContext(INVALID_SPAN_CONTEXT);
    const parentSpan = trace.getSpan(ctx);
    if (parentSpan instanceof LightSpan && this.childrenFollow && options.links === undefined && options.attributes === undefined) {
      // a child of svc's own sampled span: the built-in samplers sample it (no check of the parent's ids)
      const p = parentSpan.spanContext();
      if (p.traceFlags & TraceFlags.SAMPLED) {
        const pool = this.pooled;
        const at = pool ? pool.draw(8) : 0;
        const buf = pool?.buf;
        const sc: SpanContext = { traceId: p.traceId, spanId: buf ? PooledIds.hex(buf, at, 8) : this.ids.generateSpanId(), traceFlags: TraceFlags.SAMPLED, traceState: p.traceState };
        const span = new LightSpan(this, sc, name, options.kind ?? SpanKind.INTERNAL, p.spanId, false, options.startTime);
        if (buf) span.placeIds(buf, at, parentSpan.traceBuf, parentSpan.traceAt, parentSpan.idBuf, parentSpan.idAt);
        return span;
      }
    }
    if (parentSpan instanceof LightUnsampled && this.unsampledFollow && options.links === undefined && options.attributes === undefined) {
      // a child of a span this tracer left out (a remote parent's is the API's class): left out
      // too, without asking the sampler, with a span id of its own for the traceparent it sends on
      const p = parentSpan.spanContext();
      return new LightUnsampled({ traceId: p.traceId, spanId: this.ids.generateSpanId(), traceFlags: TraceFlags.NONE, traceState: p.traceState });
    }
    const parent = parentSpan?.spanContext();
    const valid = parent !== undefined && trace.isSpanContextValid(parent);
    const pool = this.pooled;
    // the span id before the trace id, in the SDK's order
    const idAt = pool ? pool.draw(8) : 0;
    const idBuf = pool?.buf;
    const spanId = idBuf ? PooledIds.hex(idBuf, idAt, 8) : this.ids.generateSpanId();
    // the trace id's bytes: a new trace draws them, a local parent's trace keeps its own
    const local = valid && parentSpan instanceof LightSpan ? parentSpan : undefined;
    let traceBuf = local?.traceBuf;
    let traceAt = local ? local.traceAt : 0;
    if (pool && !valid) {
      traceAt = pool.draw(16);
      traceBuf = pool.buf;
    }
    const traceId = valid ? parent.traceId : traceBuf ? PooledIds.hex(traceBuf, traceAt, 16) : this.ids.generateTraceId();
    const kind = options.kind ?? SpanKind.INTERNAL;
    const result = this.sampler.shouldSample(ctx, traceId, name, kind, options.attributes ?? NO_ATTRIBUTES, options.links ?? NO_LINKS);
    const sc: SpanContext = {
      traceId,
      spanId,
      traceFlags: result.decision === SamplingDecision.RECORD_AND_SAMPLED ? TraceFlags.SAMPLED : TraceFlags.NONE,
      traceState: result.traceState ?? (valid ? parent.traceState : undefined),
    };
    if (result.decision === SamplingDecision.NOT_RECORD) return new LightUnsampled(sc);
    const span = new LightSpan(this, sc, name, kind, valid ? parent.spanId : undefined, valid && parent.isRemote === true, options.startTime);
    if (idBuf) span.placeIds(idBuf, idAt, traceBuf, traceAt, local?.idBuf, local ? local.idAt : 0);
    if (options.links) span.addLinks(options.links);
    if (options.attributes) span.setAttributes(options.attributes);
    if (result.attributes) span.setAttributes(result.attributes);
    return span;
  }

  startActiveSpan<F extends (span: Span) => unknown>(name: string, fn: F): ReturnType<F>;
  startActiveSpan<F extends (span: Span) => unknown>(name: string, options: SpanOptions, fn: F): ReturnType<F>;
  startActiveSpan<F extends (span: Span) => unknown>(name: string, options: SpanOptions, ctx: Context, fn: F): ReturnType<F>;
  startActiveSpan<F extends (span: Span) => unknown>(name: string, a?: SpanOptions | F, b?: Context | F, c?: F): ReturnType<F> {
    const fn = (c ?? (typeof b === "function" ? b : a)) as F;
    const options = typeof a === "object" ? a : {};
    const ctx = typeof b === "object" ? b : apiContext.active();
    const span = this.startSpan(name, options, ctx);
    return apiContext.with(trace.setSpan(ctx, span), fn as (s: Span) => ReturnType<F>, undefined, span);
  }
}

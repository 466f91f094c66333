// svc's span for the OTLP http/protobuf pipeline: the OpenTelemetry API's Span, recording what the
// SDK's span records (attributes under the span limits, events, links, status, name, start and end
// time with the SDK's clock: wall-clock start, monotonic duration) with less work per span: the
// attributes go into two arrays rather than a many-keyed object, the times stay numbers until they
// are encoded, and the ended span goes straight to the encoding span processor
// (encoding-processor.ts), which writes its protobuf at once (otlp-light.ts). With them, one
// request's spans and their export cost 8.5-8.7 µs of CPU where the SDK's cost 12.8 µs, and about
// 0.6 µs less with the ids kept as bytes (light-ids.ts) (`npm run bench -- tracing`, docs/observability.md).
// light-tracer.ts starts these spans.
import { INVALID_SPAN_CONTEXT, SpanStatusCode, diag, trace, type Attributes, type AttributeValue, type Exception, type Link, type Span, type SpanContext, type SpanStatus, type TimeInput } from "@opentelemetry/api";
import { addHrTimes, hrTimeToMilliseconds, isAttributeValue, isTimeInput, millisToHrTime, sanitizeAttributes, timeInputToHrTime } from "@opentelemetry/core";
import type { TimedEvent } from "@opentelemetry/sdk-trace-base";

/** What a span needs of its tracer: where it goes when it ends, and the limits it keeps. */
export interface LightOwner {
  readonly countLimit: number;
  readonly lengthLimit: number;
  readonly eventLimit: number;
  readonly linkLimit: number;
  ended(span: LightSpan): void;
}

const UNSET: SpanStatus = Object.freeze({ code: SpanStatusCode.UNSET });
const ms = (t: TimeInput) => hrTimeToMilliseconds(timeInputToHrTime(t));

export class LightSpan implements Span {
  /** attribute keys and values, in the order first set (the SDK's object's key order) */
  readonly keys: string[] = [];
  readonly values: AttributeValue[] = [];
  droppedAttributes = 0;
  events: TimedEvent[] | undefined;
  droppedEvents = 0;
  links: Link[] | undefined;
  droppedLinks = 0;
  status: SpanStatus = UNSET;
  /** wall-clock start (epoch ms) and the monotonic clock then, as the SDK's span keeps them */
  readonly startMs: number;
  private readonly perf0: number;
  /** duration in ms, once ended */
  durationMs = -1;
  /** where the span's own id, its trace id and its parent's id are as bytes, when svc's pooled ids
   * drew them (light-ids.ts): the encoder copies them. Unset (a remote parent, another id
   * generator), the encoder writes them from the SpanContext's hex. */
  idBuf: Buffer | undefined = undefined;
  idAt = 0;
  traceBuf: Buffer | undefined = undefined;
  traceAt = 0;
  parentBuf: Buffer | undefined = undefined;
  parentAt = 0;

  constructor(
    private readonly owner: LightOwner,
    private readonly ctx: SpanContext,
    public name: string,
    /** the API's SpanKind */
    readonly kind: number,
    /** the parent's span id and whether it came from another process; undefined for a root */
    readonly parentId: string | undefined,
    readonly parentRemote: boolean,
    startTime?: TimeInput,
  ) {
    this.perf0 = performance.now();
    this.startMs = startTime === undefined ? Date.now() : ms(startTime);
  }

  /** the bytes behind the ids (see idBuf), set by the tracer right after it makes the span */
  placeIds(idBuf: Buffer | undefined, idAt: number, traceBuf: Buffer | undefined, traceAt: number, parentBuf: Buffer | undefined, parentAt: number): void {
    this.idBuf = idBuf;
    this.idAt = idAt;
    this.traceBuf = traceBuf;
    this.traceAt = traceAt;
    this.parentBuf = parentBuf;
    this.parentAt = parentAt;
  }

  spanContext(): SpanContext {
    return this.ctx;
  }

  setAttribute(key: string, value: AttributeValue): this {
    if (value == null || this.durationMs >= 0) return this;
    if (key.length === 0) {
      diag.warn(`Invalid attribute key: ${key}`);
      return this;
    }
    const t = typeof value;
    if (t !== "string" && t !== "number" && t !== "boolean" && !isAttributeValue(value)) {
      diag.warn(`Invalid attribute value set for key: ${key}`);
      return this;
    }
    const keys = this.keys;
    let i = keys.length - 1;
    while (i >= 0 && keys[i] !== key) i--;
    if (i < 0 && keys.length >= this.owner.countLimit) {
      this.droppedAttributes++;
      return this;
    }
    // an array is copied (as the SDK's span does): the caller may change its own afterwards
    const v = t === "object" ? truncate((value as unknown[]).slice() as AttributeValue, this.owner.lengthLimit) : this.owner.lengthLimit === Infinity ? value : truncate(value, this.owner.lengthLimit);
    if (i < 0) {
      keys.push(key);
      this.values.push(v);
    } else this.values[i] = v;
    return this;
  }

  setAttributes(attributes: Attributes): this {
    for (const key in attributes) if (Object.prototype.hasOwnProperty.call(attributes, key)) this.setAttribute(key, attributes[key]!);
    return this;
  }

  addEvent(name: string, attributesOrTime?: Attributes | TimeInput, time?: TimeInput): this {
    if (this.durationMs >= 0) return this;
    const isTime = isTimeInput(attributesOrTime);
    const at = isTime ? (isTimeInput(time) ? time : (attributesOrTime as TimeInput)) : time;
    const attributes = isTime ? {} : clean(attributesOrTime as Attributes | undefined, this.owner.lengthLimit);
    const when = at === undefined ? addHrTimes(millisToHrTime(this.startMs), millisToHrTime(performance.now() - this.perf0)) : timeInputToHrTime(at);
    this.droppedEvents += pushBounded((this.events ??= []), { name, attributes, time: when, droppedAttributesCount: 0 }, this.owner.eventLimit);
    return this;
  }

  addLink(link: Link): this {
    if (this.durationMs >= 0) return this;
    const kept = link.attributes ? { context: link.context, attributes: clean(link.attributes, this.owner.lengthLimit) } : { context: link.context };
    this.droppedLinks += pushBounded((this.links ??= []), kept, this.owner.linkLimit);
    return this;
  }

  addLinks(links: Link[]): this {
    for (const l of links) this.addLink(l);
    return this;
  }

  setStatus(status: SpanStatus): this {
    if (this.durationMs >= 0 || status.code === SpanStatusCode.UNSET || this.status.code === SpanStatusCode.OK) return this;
    this.status = status.code === SpanStatusCode.ERROR && typeof status.message === "string" ? { code: status.code, message: status.message } : { code: status.code };
    return this;
  }

  updateName(name: string): this {
    if (this.durationMs < 0) this.name = name;
    return this;
  }

  end(endTime?: TimeInput): void {
    if (this.durationMs >= 0) {
      diag.error(`${this.name} ${this.ctx.traceId}-${this.ctx.spanId} - You can only call end() on a span once.`);
      return;
    }
    const d = endTime === undefined ? performance.now() - this.perf0 : ms(endTime) - this.startMs;
    this.durationMs = d > 0 ? d : 0;
    this.owner.ended(this);
  }

  isRecording(): boolean {
    return this.durationMs < 0;
  }

  recordException(exception: Exception, time?: TimeInput): void {
    const attributes: Attributes = {};
    if (typeof exception === "string") attributes["exception.message"] = exception;
    else if (exception) {
      const type = exception.code ?? exception.name;
      if (type) attributes["exception.type"] = String(type);
      if (exception.message) attributes["exception.message"] = exception.message;
      if (exception.stack) attributes["exception.stacktrace"] = exception.stack;
    }
    if (attributes["exception.type"] || attributes["exception.message"]) this.addEvent("exception", attributes, time);
    else diag.warn(`Failed to record an exception ${exception}`);
  }
}

/** an event's or link's attributes as the SDK keeps them: sanitised, under the length limit */
function clean(attributes: Attributes | undefined, limit: number): Attributes {
  const out = sanitizeAttributes(attributes);
  if (limit !== Infinity) for (const k in out) out[k] = truncate(out[k]!, limit);
  return out;
}

/** `item` added to a list kept under `limit` as the SDK keeps events and links: none kept at a
 * limit of 0, the oldest dropped when full; how many were dropped (0 or 1) */
function pushBounded<T>(list: T[], item: T, limit: number): number {
  if (limit === 0) return 1;
  let dropped = 0;
  if (list.length >= limit) {
    list.shift();
    dropped = 1;
  }
  list.push(item);
  return dropped;
}

/** a value under the span limits' length limit (strings, and the strings of an array) */
function truncate(v: AttributeValue, limit: number): AttributeValue {
  if (limit === Infinity) return v;
  if (typeof v === "string") return v.length > limit ? v.slice(0, limit) : v;
  if (Array.isArray(v)) return (v as unknown[]).map((x) => (typeof x === "string" && x.length > limit ? x.slice(0, limit) : x)) as AttributeValue;
  return v;
}

/** The API's NonRecordingSpan (its context, every other call a no-op). The package does not export
 * the class, so it is read from the span the API's one call for it makes. */
const NonRecordingSpan = trace.wrapSpanContext(INVALID_SPAN_CONTEXT).constructor as new (ctx: SpanContext) => Span;

/** A span the light tracer's sampler left out: the API's NonRecordingSpan, as a class of svc's
 * own so that the tracer knows its children are local ones (light-tracer.ts). */
export class LightUnsampled extends NonRecordingSpan {}

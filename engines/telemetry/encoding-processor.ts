// svc's batching span processor for OTLP http/protobuf: the SDK's BatchSpanProcessor's behaviour
// (OTEL_BSP_SCHEDULE_DELAY, OTEL_BSP_MAX_EXPORT_BATCH_SIZE, OTEL_BSP_MAX_QUEUE_SIZE and
// OTEL_BSP_EXPORT_TIMEOUT with its defaults; sampled spans only; one batch exported at a time;
// spans dropped and counted when the queue is full; forceFlush and shutdown export what is queued)
// with one difference: each span is encoded into protobuf when it ends and no reference to it is
// kept. The BatchSpanProcessor holds every ended span (~1.6 KB of objects) until its batch is sent,
// so in a busy server they outlive a scavenge or two and are promoted to the old generation, which
// cost more than encoding them (docs/observability.md). The bytes go to the official transport
// (exporter.ts: retries, timeout, concurrency limit), as the official serializer would write them.
import { TraceFlags, context, diag } from "@opentelemetry/api";
import { ExportResultCode, getNumberFromEnv, globalErrorHandler, suppressTracing, type ExportResult } from "@opentelemetry/core";
import type { ReadableSpan, Span, SpanProcessor } from "@opentelemetry/sdk-trace-base";
import { addSpan, encodeBatch, scopeWriter, type Batch, type Resource, type Scope } from "./otlp-proto";
import { encodeLight } from "./otlp-light";
import type { LightSpan } from "./light-span";
import { Writer } from "./otlp-writer";

/** One request's bytes and how many spans they hold (the exporter's metrics count spans). */
export interface EncodedBatch {
  bytes: Uint8Array;
  count: number;
}

/** What the processor needs of an exporter: the official OTLPExporterBase, typed for bytes. */
export interface BatchExporter {
  export(batch: EncodedBatch, done: (r: ExportResult) => void): void;
  shutdown(): Promise<void>;
}

export interface BatchOptions {
  maxExportBatchSize?: number;
  maxQueueSize?: number;
  scheduledDelayMillis?: number;
  exportTimeoutMillis?: number;
}

/** The BatchSpanProcessor's settings from the OTEL_BSP_* variables (its own reader). */
export function batchOptionsFromEnv(): BatchOptions {
  return {
    maxExportBatchSize: getNumberFromEnv("OTEL_BSP_MAX_EXPORT_BATCH_SIZE"),
    maxQueueSize: getNumberFromEnv("OTEL_BSP_MAX_QUEUE_SIZE"),
    scheduledDelayMillis: getNumberFromEnv("OTEL_BSP_SCHEDULE_DELAY"),
    exportTimeoutMillis: getNumberFromEnv("OTEL_BSP_EXPORT_TIMEOUT"),
  };
}

export class EncodingSpanProcessor implements SpanProcessor {
  private readonly maxBatch: number;
  private readonly maxQueue: number;
  private readonly delay: number;
  private readonly timeout: number;
  /** the spans of the batch being filled, encoded by resource and scope */
  private batch: Batch = new Map();
  private count = 0;
  /** spans in sealed batches not yet exported (with `count`, the BSP's queue) */
  private waiting = 0;
  private readonly sealed: EncodedBatch[] = [];
  private readonly pool: Writer[] = [];
  private exporting: Promise<void> | undefined;
  private timer: NodeJS.Timeout | undefined;
  private dropped = 0;
  private stopping: Promise<void> | undefined;
  /** a buffer for a scope's spans: one a sealed batch gave back, or a new one */
  private readonly writer = (): Writer => this.pool.pop() ?? new Writer(1 << 14);

  constructor(private readonly exporter: BatchExporter, o: BatchOptions = {}) {
    this.maxQueue = o.maxQueueSize ?? 2048;
    this.maxBatch = Math.min(o.maxExportBatchSize ?? 512, this.maxQueue);
    this.delay = o.scheduledDelayMillis ?? 5000;
    this.timeout = o.exportTimeoutMillis ?? 30000;
  }

  onStart(_span: Span): void {}

  onEnd(span: ReadableSpan): void {
    if (!this.admit(span.spanContext().traceFlags)) return;
    addSpan(this.batch, span, this.writer);
    this.added();
  }

  /** The entry for light spans (light-tracer.ts) of one resource and scope. */
  lightSink(resource: Resource, scope: Scope): (span: LightSpan) => void {
    // the scope's buffer in the batch being filled, found once per batch
    let batch: Batch | undefined;
    let w: Writer | undefined;
    return (span) => {
      if (!this.admit(span.spanContext().traceFlags)) return;
      if (batch !== this.batch) w = scopeWriter((batch = this.batch), resource, scope, this.writer);
      encodeLight(w!, span);
      this.added();
    };
  }

  /** whether an ended span is queued: sampled, the processor running and its queue not full */
  private admit(flags: number): boolean {
    if (this.stopping || (flags & TraceFlags.SAMPLED) === 0) return false;
    if (this.count + this.waiting >= this.maxQueue) {
      if (this.dropped++ === 0) diag.debug("maxQueueSize reached, dropping spans");
      return false;
    }
    if (this.dropped > 0) {
      diag.warn(`Dropped ${this.dropped} spans because maxQueueSize reached`);
      this.dropped = 0;
    }
    return true;
  }

  /** a span was encoded into the batch being filled: a full batch is sealed and sent */
  private added(): void {
    if (++this.count >= this.maxBatch) {
      this.seal();
      this.next();
    } else if (!this.exporting) this.arm();
  }

  /** the schedule delay's timer, started by a batch's first span (unless an export is under way) */
  private arm(): void {
    if (this.timer) return;
    this.timer = setTimeout(() => {
      this.timer = undefined;
      this.seal();
      this.next();
    }, this.delay);
    this.timer.unref();
  }

  forceFlush(): Promise<void> {
    return this.stopping ?? this.flushAll();
  }

  shutdown(): Promise<void> {
    return (this.stopping ??= this.flushAll().then(() => this.exporter.shutdown()));
  }

  /** the batch being filled becomes a request's bytes, its writers back to the pool */
  private seal(): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
    if (this.count === 0) return;
    const bytes = encodeBatch(this.batch);
    for (const scopes of this.batch.values())
      for (const w of scopes.values()) {
        w.pos = 0;
        this.pool.push(w);
      }
    this.batch = new Map();
    this.sealed.push({ bytes, count: this.count });
    this.waiting += this.count;
    this.count = 0;
  }

  /** export the oldest sealed batch unless one is being exported; then the next, or the timer */
  private next(): void {
    if (this.exporting) return;
    const b = this.sealed.shift();
    if (!b) return;
    this.exporting = this.send(b)
      .catch((e) => globalErrorHandler(e))
      .finally(() => {
        this.exporting = undefined;
        if (this.sealed.length) this.next();
        else if (this.count > 0) this.arm();
      });
  }

  /** every sealed batch and the one being filled, exported now (and the one under way awaited) */
  private async flushAll(): Promise<void> {
    this.seal();
    const sends = this.sealed.splice(0).map((b) => this.send(b));
    if (this.exporting) sends.push(this.exporting);
    await Promise.all(sends);
  }

  private send(b: EncodedBatch): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error("Timeout")), this.timeout);
      context.with(suppressTracing(context.active()), () =>
        this.exporter.export(b, (r) => {
          clearTimeout(timer);
          if (r.code === ExportResultCode.SUCCESS) resolve();
          else reject(r.error ?? new Error("span export failed"));
        }),
      );
    }).finally(() => {
      this.waiting -= b.count;
    });
  }
}

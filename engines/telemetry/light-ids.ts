// Trace and span ids for light spans (light-tracer.ts), bytes first. They are drawn from a buffer
// of random bytes that crypto.randomFillSync fills 4 KiB at a time (about a hundred requests'
// ids). The hex the API's SpanContext holds is made once from those bytes, and each span keeps
// where its bytes are (light-span.ts), so the encoder copies them (otlp-light.ts). The SDK's
// generator instead writes Math.random() into a shared buffer, and the encoder then parsed the
// hex back: about 0.6 µs of a traced request's 9 in a paired run (docs/observability.md, "Ids").
import { randomFillSync } from "node:crypto";
import type { IdGenerator } from "@opentelemetry/sdk-trace-base";

const SIZE = 4096;

export class PooledIds implements IdGenerator {
  /** the bytes ids are drawn from: replaced, never refilled, when used up (spans point into it) */
  buf: Buffer = Buffer.allocUnsafe(0);
  private at = 0;

  /** where the next `n` random bytes are in `buf` (read `buf` after the call): never all zero,
   * which W3C trace context reserves for "no id" (the SDK's generator makes the same fix) */
  draw(n: 8 | 16): number {
    if (this.at + n > this.buf.length) {
      this.buf = randomFillSync(Buffer.allocUnsafe(SIZE));
      this.at = 0;
    }
    const at = this.at;
    this.at += n;
    const b = this.buf;
    let i = at;
    while (i < at + n && b[i] === 0) i++;
    if (i === at + n) b[at + n - 1] = 1;
    return at;
  }

  /** the hex of `n` bytes at `at` of `buf` */
  static hex(buf: Buffer, at: number, n: number): string {
    return buf.toString("hex", at, at + n);
  }

  generateTraceId(): string {
    const at = this.draw(16);
    return PooledIds.hex(this.buf, at, 16);
  }

  generateSpanId(): string {
    const at = this.draw(8);
    return PooledIds.hex(this.buf, at, 8);
  }
}

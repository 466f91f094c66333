// Trace and span ids for the SDK (its IdGenerator option): slices of a hex string of random bytes
// from the system's CSPRNG, refilled every 2 KiB. The SDK's own generator makes each id from
// Math.random through a Buffer and a hex conversion, about 0.5 µs an id, four ids a request.
import { randomBytes } from "node:crypto";
import type { IdGenerator } from "@opentelemetry/sdk-trace-base";

const POOL_BYTES = 2048;
const ZERO_TRACE = "0".repeat(32);
const ZERO_SPAN = "0".repeat(16);

export class PooledIdGenerator implements IdGenerator {
  private pool = "";
  private at = 0;

  private take(chars: number): string {
    if (this.at + chars > this.pool.length) {
      this.pool = randomBytes(POOL_BYTES).toString("hex");
      this.at = 0;
    }
    const id = this.pool.slice(this.at, (this.at += chars));
    return id;
  }

  // an all-zero id is invalid in W3C trace context: never kept (a chance of 2^-64 or 2^-128)
  generateTraceId(): string {
    const id = this.take(32);
    return id === ZERO_TRACE ? this.generateTraceId() : id;
  }

  generateSpanId(): string {
    const id = this.take(16);
    return id === ZERO_SPAN ? this.generateSpanId() : id;
  }
}

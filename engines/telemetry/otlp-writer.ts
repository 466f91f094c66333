// The protobuf writer behind svc's OTLP encoder (otlp-proto.ts): one growing byte buffer, written
// in one pass with room made once per field rather than a bounds check per byte; a message's
// length is written when it closes (one byte kept for it, the body moved on when it needs more).
import type { HrTime } from "@opentelemetry/api";

/** A growing byte buffer, reused: `pos = 0` starts it over. */
export class Writer {
  buf: Buffer;
  pos = 0;

  constructor(size = 1 << 16) {
    this.buf = Buffer.allocUnsafe(size);
  }

  room(n: number): void {
    if (this.pos + n <= this.buf.length) return;
    let size = this.buf.length * 2;
    while (size < this.pos + n) size *= 2;
    const next = Buffer.allocUnsafe(size);
    this.buf.copy(next, 0, 0, this.pos);
    this.buf = next;
  }

  /** a varint below 2^32 (tags, lengths, counts), room already made */
  u32(v: number): void {
    const b = this.buf;
    while (v > 0x7f) {
      b[this.pos++] = (v & 0x7f) | 0x80;
      v >>>= 7;
    }
    b[this.pos++] = v;
  }

  /** any integer as a varint (negative: 64-bit two's complement, as the official writer) */
  varint(value: number): void {
    this.room(10);
    if (value >= 0 && value <= 0xffffffff) return this.u32(value);
    let low: number;
    let high: number;
    const abs = Math.abs(value);
    low = abs >>> 0;
    high = (abs / 0x100000000) >>> 0;
    if (value < 0) {
      low = ~low >>> 0;
      high = ~high >>> 0;
      low = (low + 1) >>> 0;
      if (low === 0) high = (high + 1) >>> 0;
    }
    const b = this.buf;
    while (high > 0 || low > 0x7f) {
      b[this.pos++] = (low & 0x7f) | 0x80;
      low = ((low >>> 7) | (high << 25)) >>> 0;
      high >>>= 7;
    }
    b[this.pos++] = low & 0x7f;
  }

  tag(field: number, wire: number): void {
    this.room(3);
    this.u32((field << 3) | wire);
  }

  /** a string's length and UTF-8 bytes: short ASCII by a loop, the rest by Buffer's encoder */
  str(s: string): void {
    const n = s.length;
    if (n < 128) {
      this.room(n + 1);
      const b = this.buf;
      let p = this.pos + 1;
      let i = 0;
      for (; i < n; i++) {
        const c = s.charCodeAt(i);
        if (c > 127) break;
        b[p++] = c;
      }
      if (i === n) {
        b[this.pos] = n;
        this.pos = p;
        return;
      }
    }
    const len = Buffer.byteLength(s, "utf8");
    this.room(len + 5);
    this.u32(len);
    this.pos += this.buf.write(s, this.pos, len, "utf8");
  }

  /** 16 or 8 bytes from a trace or span id's hex */
  hex(h: string): void {
    const n = h.length >> 1;
    this.room(n + 1);
    const b = this.buf;
    let p = this.pos;
    b[p++] = n;
    for (let i = 0; i < h.length; i += 2) b[p++] = HEX[((h.charCodeAt(i) & 0x7f) << 7) | (h.charCodeAt(i + 1) & 0x7f)];
    this.pos = p;
  }

  fixed32(v: number): void {
    this.room(4);
    this.buf.writeUInt32LE(v >>> 0, this.pos);
    this.pos += 4;
  }

  /** an HrTime as nanoseconds since the epoch (fixed64), with the official writer's arithmetic */
  time(t: HrTime): void {
    const sLow = t[0] & 0xffff;
    const sHigh = (t[0] / 0x10000) >>> 0;
    const fromLow = sLow * 1e9;
    const fromHigh = sHigh * 1e9;
    const low = (fromLow >>> 0) + (((fromHigh & 0xffff) * 0x10000) >>> 0) + t[1];
    const high = (Math.floor(fromLow / 0x100000000) + ((fromHigh / 0x10000) >>> 0) + Math.floor(low / 0x100000000)) >>> 0;
    this.room(8);
    this.buf.writeUInt32LE(low >>> 0, this.pos);
    this.buf.writeUInt32LE(high, this.pos + 4);
    this.pos += 8;
  }

  /** open a length-delimited field: one byte kept for the length (most messages are short) */
  open(): number {
    this.room(1);
    return this.pos++;
  }

  /** close it: the length written, the body moved on when it needs more than the one byte */
  close(at: number): void {
    const len = this.pos - at - 1;
    if (len < 0x80) {
      this.buf[at] = len;
      return;
    }
    const size = len < 0x4000 ? 2 : len < 0x200000 ? 3 : len < 0x10000000 ? 4 : 5;
    this.room(size - 1);
    this.buf.copyWithin(at + size, at + 1, this.pos);
    this.pos += size - 1;
    const end = this.pos;
    this.pos = at;
    this.u32(len);
    this.pos = end;
  }
}

const nibble = (c: number) => (c <= 57 ? c - 48 : c <= 70 ? c - 55 : c - 87);
/** a byte from two hex digits' char codes, (high << 7) | low */
const HEX = new Uint8Array(1 << 14);
for (const a of "0123456789abcdefABCDEF") for (const b of "0123456789abcdefABCDEF") HEX[(a.charCodeAt(0) << 7) | b.charCodeAt(0)] = (nibble(a.charCodeAt(0)) << 4) | nibble(b.charCodeAt(0));

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

  /** `n` bytes (an id's, n < 128) from `src` at `at`, with their length */
  bytes(src: Uint8Array, at: number, n: number): void {
    this.room(n + 1);
    const b = this.buf;
    let p = this.pos;
    b[p++] = n;
    for (let i = at; i < at + n; i++) b[p++] = src[i];
    this.pos = p;
  }

  /** 16 or 8 bytes from a trace or span id's hex. The ids met last are remembered with their
   * bytes: a request's spans share its trace id, and a span's id is met again as its child's parent. */
  hex(h: string): void {
    const n = h.length >> 1;
    this.room(n + 1);
    const b = this.buf;
    let p = this.pos;
    b[p++] = n;
    const m = seen.indexOf(h);
    if (m >= 0) {
      const from = m * 16;
      for (let i = 0; i < n; i++) b[p++] = seenBytes[from + i];
    } else {
      const from = (seenNext = (seenNext + 1) & 7) * 16;
      seen[seenNext] = h;
      for (let i = 0, j = from; i < h.length; i += 2) b[p++] = seenBytes[j++] = HEX[((h.charCodeAt(i) & 0x7f) << 7) | (h.charCodeAt(i + 1) & 0x7f)];
    }
    this.pos = p;
  }

  fixed32(v: number): void {
    this.room(4);
    this.le32(v >>> 0);
  }

  /** four bytes little-endian, room already made (Buffer's writeUInt32LE checks each call) */
  private le32(v: number): void {
    const b = this.buf;
    let p = this.pos;
    b[p++] = v & 0xff;
    b[p++] = (v >>> 8) & 0xff;
    b[p++] = (v >>> 16) & 0xff;
    b[p++] = v >>> 24;
    this.pos = p;
  }

  /** an HrTime as nanoseconds since the epoch (fixed64), with the official writer's arithmetic */
  time(t: HrTime): void {
    this.nanos(t[0], t[1]);
  }

  private nanos(s: number, ns: number): void {
    const sLow = s & 0xffff;
    const sHigh = (s / 0x10000) >>> 0;
    const fromLow = sLow * 1e9;
    const fromHigh = sHigh * 1e9;
    const low = (fromLow >>> 0) + (((fromHigh & 0xffff) * 0x10000) >>> 0) + ns;
    const high = (Math.floor(fromLow / 0x100000000) + ((fromHigh / 0x10000) >>> 0) + Math.floor(low / 0x100000000)) >>> 0;
    this.room(8);
    this.le32(low >>> 0);
    this.le32(high);
  }

  /** epoch milliseconds plus a duration in ms (a light span's times) as nanoseconds (fixed64) */
  msTime(ms: number, plusMs = 0): void {
    const sec = Math.floor(ms / 1000);
    let ns = Math.round((ms - sec * 1000) * 1e6) + Math.round(plusMs * 1e6);
    const more = Math.floor(ns / 1e9);
    this.nanos(sec + more, ns - more * 1e9);
  }

  /** open a length-delimited field: one byte kept for the length (most messages are short) */
  open(): number {
    this.room(1);
    return this.pos++;
  }

  /** open a field that mostly takes 128 bytes to 16 KB (a span): two bytes kept for its length */
  open2(): number {
    this.room(2);
    const at = this.pos;
    this.pos += 2;
    return at;
  }

  /** close a field opened by open2 */
  close2(at: number): void {
    this.length(at, 2, this.pos - at - 2);
  }

  /** close it: the length written, the body moved on when it needs more than the one byte */
  close(at: number): void {
    const len = this.pos - at - 1;
    if (len < 0x80) {
      this.buf[at] = len;
      return;
    }
    this.length(at, 1, len);
  }

  /** a field's length written where `kept` bytes were kept for it, the body moved only when the
   * length takes another number of bytes */
  private length(at: number, kept: number, len: number): void {
    const size = len < 0x80 ? 1 : len < 0x4000 ? 2 : len < 0x200000 ? 3 : len < 0x10000000 ? 4 : 5;
    if (size !== kept) {
      this.room(size - kept);
      this.buf.copyWithin(at + size, at + kept, this.pos);
      this.pos += size - kept;
    }
    const end = this.pos;
    this.pos = at;
    this.u32(len);
    this.pos = end;
  }
}

/** the last eight ids hex() met, and their bytes (16 each) */
const seen: string[] = new Array(8).fill("");
const seenBytes = new Uint8Array(8 * 16);
let seenNext = 0;

const nibble = (c: number) => (c <= 57 ? c - 48 : c <= 70 ? c - 55 : c - 87);
/** a byte from two hex digits' char codes, (high << 7) | low */
const HEX = new Uint8Array(1 << 14);
for (const a of "0123456789abcdefABCDEF") for (const b of "0123456789abcdefABCDEF") HEX[(a.charCodeAt(0) << 7) | b.charCodeAt(0)] = (nibble(a.charCodeAt(0)) << 4) | nibble(b.charCodeAt(0));

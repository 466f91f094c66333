// GGUF v3 serialization: metadata key/values, tensor infos, aligned tensor data.
// Just enough of the format (https://github.com/ggml-org/ggml/blob/master/docs/gguf.md) for the
// generated model; everything is little-endian, offsets are relative to the data section.
import { open } from "node:fs/promises";

export const GGUF_ALIGNMENT = 32;

/** Metadata value types of the GGUF format. */
const enum VT { U32 = 4, I32 = 5, F32 = 6, BOOL = 7, STRING = 8, ARRAY = 9 }

export type GgufValue =
  | { u32: number }
  | { f32: number }
  | { bool: boolean }
  | { str: string }
  | { strings: string[] }
  | { f32s: Float32Array }
  | { i32s: Int32Array };

/** ggml tensor types used here */
export const enum GgmlType { F32 = 0, F16 = 1 }

export interface TensorSpec {
  name: string;
  /** ne0 first: the contiguous (input) dimension */
  dims: number[];
  type: GgmlType;
  /** fills the tensor's data; called once, in file order */
  fill: () => Buffer;
}

/** Growable little-endian byte sink for the header. */
class Sink {
  private buf = Buffer.alloc(1 << 16);
  len = 0;
  private need(n: number) {
    if (this.len + n <= this.buf.length) return;
    let size = this.buf.length * 2;
    while (size < this.len + n) size *= 2;
    const next = Buffer.alloc(size);
    this.buf.copy(next, 0, 0, this.len);
    this.buf = next;
  }
  u32(v: number) { this.need(4); this.buf.writeUInt32LE(v, this.len); this.len += 4; }
  i32(v: number) { this.need(4); this.buf.writeInt32LE(v, this.len); this.len += 4; }
  u64(v: number) { this.need(8); this.buf.writeBigUInt64LE(BigInt(v), this.len); this.len += 8; }
  f32(v: number) { this.need(4); this.buf.writeFloatLE(v, this.len); this.len += 4; }
  u8(v: number) { this.need(1); this.buf[this.len++] = v; }
  str(s: string) {
    const b = Buffer.from(s, "utf8");
    this.u64(b.length);
    this.need(b.length); b.copy(this.buf, this.len); this.len += b.length;
  }
  pad(align: number) { while (this.len % align) this.u8(0); }
  bytes() { return this.buf.subarray(0, this.len); }
}

function writeValue(s: Sink, v: GgufValue) {
  if ("u32" in v) { s.u32(VT.U32); s.u32(v.u32); }
  else if ("f32" in v) { s.u32(VT.F32); s.f32(v.f32); }
  else if ("bool" in v) { s.u32(VT.BOOL); s.u8(v.bool ? 1 : 0); }
  else if ("str" in v) { s.u32(VT.STRING); s.str(v.str); }
  else if ("strings" in v) { s.u32(VT.ARRAY); s.u32(VT.STRING); s.u64(v.strings.length); for (const x of v.strings) s.str(x); }
  else if ("f32s" in v) { s.u32(VT.ARRAY); s.u32(VT.F32); s.u64(v.f32s.length); for (const x of v.f32s) s.f32(x); }
  else { s.u32(VT.ARRAY); s.u32(VT.I32); s.u64(v.i32s.length); for (const x of v.i32s) s.i32(x); }
}

export function tensorByteSize(t: Pick<TensorSpec, "dims" | "type">): number {
  return t.dims.reduce((a, b) => a * b, 1) * (t.type === GgmlType.F32 ? 4 : 2);
}

const alignUp = (n: number) => Math.ceil(n / GGUF_ALIGNMENT) * GGUF_ALIGNMENT;

/** Writes a complete GGUF v3 file; tensor data is produced one tensor at a time so large
 * models never sit in memory whole. Returns the file size in bytes. */
export async function writeGguf(file: string, meta: [string, GgufValue][], tensors: TensorSpec[]): Promise<number> {
  const h = new Sink();
  h.u32(0x46554747); // "GGUF"
  h.u32(3);
  h.u64(tensors.length);
  h.u64(meta.length);
  for (const [k, v] of meta) { h.str(k); writeValue(h, v); }
  let offset = 0;
  for (const t of tensors) {
    h.str(t.name);
    h.u32(t.dims.length);
    for (const d of t.dims) h.u64(d);
    h.u32(t.type);
    h.u64(offset);
    offset = alignUp(offset + tensorByteSize(t));
  }
  h.pad(GGUF_ALIGNMENT);

  const fh = await open(file, "w");
  try {
    let pos = 0;
    const put = async (b: Buffer) => { await fh.write(b, 0, b.length, pos); pos += b.length; };
    await put(h.bytes());
    for (const t of tensors) {
      const data = t.fill();
      if (data.length !== tensorByteSize(t)) throw new Error(`tensor ${t.name}: ${data.length} bytes, expected ${tensorByteSize(t)}`);
      await put(data);
      const padding = alignUp(data.length) - data.length;
      if (padding) await put(Buffer.alloc(padding));
    }
    return pos;
  } finally {
    await fh.close();
  }
}

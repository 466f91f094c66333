// A loopback OTLP/HTTP trace receiver for tests: POST /v1/traces in http/json or http/protobuf,
// each span decoded to one flat shape (hex ids, attributes as plain values). The protobuf side is
// a small reader of the wire format over the fields of opentelemetry/proto/trace/v1 it needs.
import { createServer, type IncomingHttpHeaders } from "node:http";
import type { AddressInfo } from "node:net";

export interface GotSpan {
  traceId: string;
  spanId: string;
  parentSpanId: string;
  name: string;
  /** 1 internal, 2 server, 3 client */
  kind: number;
  attrs: Record<string, unknown>;
  /** 0 unset, 1 ok, 2 error */
  status: number;
  service: string;
}

export interface Receiver {
  url: string;
  spans: GotSpan[];
  /** content types and headers of the export requests */
  posts: Array<{ contentType: string; headers: IncomingHttpHeaders }>;
  close(): Promise<void>;
}

export async function otlpReceiver(): Promise<Receiver> {
  const spans: GotSpan[] = [];
  const posts: Receiver["posts"] = [];
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c) => chunks.push(c));
    req.on("end", () => {
      const body = Buffer.concat(chunks);
      const type = String(req.headers["content-type"] ?? "");
      posts.push({ contentType: type, headers: req.headers });
      if (req.url !== "/v1/traces") {
        res.statusCode = 404;
        return res.end();
      }
      spans.push(...(type.includes("json") ? fromJson(JSON.parse(body.toString("utf8"))) : fromProto(body)));
      res.setHeader("content-type", type.includes("json") ? "application/json" : "application/x-protobuf");
      res.end(type.includes("json") ? "{}" : Buffer.alloc(0));
    });
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  const port = (server.address() as AddressInfo).port;
  return { url: `http://127.0.0.1:${port}`, spans, posts, close: () => new Promise((r) => server.close(() => r())) };
}

// ---- http/json

function jsonValue(v: any): unknown {
  if (!v) return undefined;
  if ("stringValue" in v) return v.stringValue;
  if ("boolValue" in v) return v.boolValue;
  if ("intValue" in v) return Number(v.intValue);
  if ("doubleValue" in v) return Number(v.doubleValue);
  if ("arrayValue" in v) return (v.arrayValue.values ?? []).map(jsonValue);
  return undefined;
}

function jsonAttrs(list: any[] | undefined): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const kv of list ?? []) out[kv.key] = jsonValue(kv.value);
  return out;
}

function fromJson(req: any): GotSpan[] {
  const out: GotSpan[] = [];
  for (const rs of req.resourceSpans ?? []) {
    const service = String(jsonAttrs(rs.resource?.attributes)["service.name"] ?? "");
    for (const ss of rs.scopeSpans ?? []) {
      for (const s of ss.spans ?? []) {
        out.push({ traceId: s.traceId, spanId: s.spanId, parentSpanId: s.parentSpanId ?? "", name: s.name, kind: s.kind ?? 0, attrs: jsonAttrs(s.attributes), status: s.status?.code ?? 0, service });
      }
    }
  }
  return out;
}

// ---- http/protobuf

type Field = { no: number; wire: number; int?: bigint; bytes?: Buffer; fixed?: Buffer };

function* fields(buf: Buffer): Generator<Field> {
  let i = 0;
  const varint = (): bigint => {
    let r = 0n;
    let shift = 0n;
    for (;;) {
      const b = buf[i++];
      r |= BigInt(b & 0x7f) << shift;
      if ((b & 0x80) === 0) return r;
      shift += 7n;
    }
  };
  while (i < buf.length) {
    const tag = Number(varint());
    const no = tag >>> 3;
    const wire = tag & 7;
    if (wire === 0) yield { no, wire, int: varint() };
    else if (wire === 1) yield { no, wire, fixed: buf.subarray(i, (i += 8)) };
    else if (wire === 2) {
      const len = Number(varint());
      yield { no, wire, bytes: buf.subarray(i, (i += len)) };
    } else if (wire === 5) yield { no, wire, fixed: buf.subarray(i, (i += 4)) };
    else throw new Error(`unexpected wire type ${wire}`);
  }
}

function protoValue(buf: Buffer): unknown {
  for (const f of fields(buf)) {
    if (f.no === 1) return f.bytes!.toString("utf8");
    if (f.no === 2) return f.int !== 0n;
    if (f.no === 3) return Number(BigInt.asIntN(64, f.int!));
    if (f.no === 4) return f.fixed!.readDoubleLE(0);
    if (f.no === 5) return [...fields(f.bytes!)].filter((x) => x.no === 1).map((x) => protoValue(x.bytes!));
  }
  return undefined;
}

function protoKv(buf: Buffer, out: Record<string, unknown>): void {
  let key = "";
  let value: unknown;
  for (const f of fields(buf)) {
    if (f.no === 1) key = f.bytes!.toString("utf8");
    else if (f.no === 2) value = protoValue(f.bytes!);
  }
  out[key] = value;
}

function protoSpan(buf: Buffer, service: string): GotSpan {
  const s: GotSpan = { traceId: "", spanId: "", parentSpanId: "", name: "", kind: 0, attrs: {}, status: 0, service };
  for (const f of fields(buf)) {
    if (f.no === 1) s.traceId = f.bytes!.toString("hex");
    else if (f.no === 2) s.spanId = f.bytes!.toString("hex");
    else if (f.no === 4) s.parentSpanId = f.bytes!.toString("hex");
    else if (f.no === 5) s.name = f.bytes!.toString("utf8");
    else if (f.no === 6) s.kind = Number(f.int);
    else if (f.no === 9) protoKv(f.bytes!, s.attrs);
    else if (f.no === 15) for (const g of fields(f.bytes!)) if (g.no === 3) s.status = Number(g.int);
  }
  return s;
}

export function fromProto(buf: Buffer): GotSpan[] {
  const out: GotSpan[] = [];
  for (const rs of fields(buf)) {
    if (rs.no !== 1) continue;
    let service = "";
    const scopes: Buffer[] = [];
    for (const f of fields(rs.bytes!)) {
      if (f.no === 1) {
        const attrs: Record<string, unknown> = {};
        for (const a of fields(f.bytes!)) if (a.no === 1) protoKv(a.bytes!, attrs);
        service = String(attrs["service.name"] ?? "");
      } else if (f.no === 2) scopes.push(f.bytes!);
    }
    for (const sc of scopes) for (const f of fields(sc)) if (f.no === 2) out.push(protoSpan(f.bytes!, service));
  }
  return out;
}

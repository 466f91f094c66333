// Dispatch a secure-channel inner request to svc's own request handler (the same one the
// listener serves: inference listener, then the Koa app), over an in-memory socket pair: an
// unlistened http.Server parses the request exactly as a direct one, and http.request reads the
// answer as it streams. The server-side socket carries the outer caller's address (so loopback
// checks and IP allowlists judge the real caller, never "loopback because in-process") and the
// secure-channel mark (api/secure-mark.ts).
import http, { type IncomingMessage, type RequestListener } from "node:http";
import { Duplex } from "node:stream";
import type { Svc } from "../engines/svc";
import { markSecure, type SecureOrigin } from "./secure-mark";

const handlers = new WeakMap<Svc, http.Server>();

/** Called by api/app.ts createHandler: the handler inner requests are dispatched to. */
export function registerHandler(svc: Svc, handler: RequestListener): void {
  handlers.set(svc, http.createServer(handler));
}

class MemSocket extends Duplex {
  peer!: MemSocket;
  remoteAddress?: string;
  remotePort?: number;
  remoteFamily?: string;
  localAddress = "127.0.0.1";
  localPort = 0;
  encrypted = false;
  bytesRead = 0;
  connecting = false;
  override _read() {}
  override _write(chunk: Buffer, _enc: BufferEncoding, cb: (e?: Error | null) => void) {
    this.peer.push(chunk);
    cb();
  }
  override _final(cb: () => void) {
    this.peer.push(null);
    cb();
  }
  override _destroy(err: Error | null, cb: (e: Error | null) => void) {
    if (!this.peer.destroyed) this.peer.destroy();
    cb(err);
  }
  setTimeout() {
    return this;
  }
  setNoDelay() {
    return this;
  }
  setKeepAlive() {
    return this;
  }
  ref() {
    return this;
  }
  unref() {
    return this;
  }
  address() {
    return { address: this.localAddress, port: this.localPort, family: "IPv4" };
  }
}

export interface InnerRequest {
  method: string;
  path: string;
  headers: Record<string, string>;
  body?: Buffer;
}

/** Send one inner request; resolves with the response as it starts streaming. */
export function dispatchInner(svc: Svc, r: InnerRequest, from: { address: string; port?: number }, origin: SecureOrigin, signal?: AbortSignal): Promise<IncomingMessage> {
  const server = handlers.get(svc);
  if (!server) return Promise.reject(new Error("no request handler registered"));
  const client = new MemSocket();
  const srv = new MemSocket();
  client.peer = srv;
  srv.peer = client;
  srv.remoteAddress = from.address;
  srv.remotePort = from.port ?? 0;
  srv.remoteFamily = from.address.includes(":") ? "IPv6" : "IPv4";
  markSecure(srv, origin);
  server.emit("connection", srv);
  return new Promise((resolve, reject) => {
    const req = http.request({
      method: r.method,
      path: r.path,
      headers: { ...r.headers, connection: "close", "content-length": String(r.body?.length ?? 0) },
      createConnection: () => client as any,
      signal,
    });
    req.on("response", resolve);
    req.on("error", reject);
    req.end(r.body);
  });
}

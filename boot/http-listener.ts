// svc's HTTP listener: a node:http server whose request, header and idle-connection clocks
// follow the Server manifest's requestTimeoutSeconds, that can move to another address, and
// that retires a server gracefully (in-flight requests finish within a grace period, keep-alive
// connections are told to close).
import http from "node:http";
import type { AddressInfo, Socket } from "node:net";
import type { Logger } from "../engines/svc";
import { urlOf, type BoundAddress, type Listener } from "../controllers/kinds/server";

// A connection's response in flight sits on its socket (kRes) until the response closes. Not a
// Set of responses: a Set that gains and loses an entry per request is rehashed every few dozen
// requests, and the tables it leaves behind in the old generation still point at responses. V8's
// young-generation GC counts those pointers as live until the next full GC, so finished responses
// (with their requests, headers and bodies) were copied and promoted, and once promoted kept newer
// ones alive in turn: under load at 50 connections a scavenge promoted ~1.2 MB instead of ~0.15 MB
// and paused twice as long, in nearly every scavenge of a run (measured with --trace-gc-nvp).
const kRes = Symbol("response");
const kSock = Symbol("socket");
type Conn = Socket & { [kRes]?: http.ServerResponse };
type OpenRes = http.ServerResponse & { [kSock]?: Conn };

function leaveOpen(this: OpenRes): void {
  const sock = this[kSock];
  if (sock && sock[kRes] === this) sock[kRes] = undefined;
}

export interface HttpListener extends Listener {
  close(graceMs: number): Promise<void>;
}

/** Close a connection that has sent no byte within `ms` (bytesRead reads the handle's counter,
 * so the parser keeps consuming the socket directly; no data listener is added). */
function dropIfSilent(sock: Socket, ms: number, onClose: () => void): void {
  const t = setTimeout(() => {
    if (sock.bytesRead === 0) sock.destroy();
  }, ms);
  t.unref();
  sock.once("close", () => {
    clearTimeout(t);
    onClose();
  });
}

/** How often Node looks for requests past their time limits. */
const TIMEOUT_CHECK_MS = 500;
/** Headers get at most 60 s (Node's default), never more than the whole request. */
const headersLimit = (requestMs: number) => Math.min(requestMs, 60_000);

export function httpListener(handler: http.RequestListener, log: Logger, onBound: (a: BoundAddress) => void, requestTimeoutMs: () => number): HttpListener {
  let server: http.Server | null = null;
  let addr: BoundAddress | null = null;

  // Open connections per server, so a retired listener can end its keep-alive connections.
  const connections = new WeakMap<http.Server, Set<Conn>>();

  const listen = (host: string, port: number) =>
    new Promise<http.Server>((resolve, reject) => {
      const open = new Set<Conn>();
      // requestTimeout bounds the whole request (headers and body: a request stays "active" until
      // its body ends), headersTimeout the headers; Node checks both only every
      // connectionsCheckingInterval (30 s by default), so a short check makes trickling sockets
      // (slowloris, slow bodies) close within the configured time. Responses may stream longer.
      const first = requestTimeoutMs();
      const s = http.createServer({ requestTimeout: first, headersTimeout: headersLimit(first), connectionsCheckingInterval: TIMEOUT_CHECK_MS }, (req, res) => {
        // Read per request so a Server manifest change applies without rebinding.
        const limit = requestTimeoutMs();
        if (s.requestTimeout !== limit) {
          s.requestTimeout = limit;
          s.headersTimeout = headersLimit(limit);
        }
        const sock = req.socket as Conn;
        sock[kRes] = res;
        (res as OpenRes)[kSock] = sock;
        res.on("close", leaveOpen); // shared listener: no per-request closure
        handler(req, res);
      });
      // Node starts those clocks at a connection's first byte: one that sends nothing would stay.
      s.on("connection", (sock: Conn) => {
        open.add(sock);
        dropIfSilent(sock, headersLimit(requestTimeoutMs()), () => open.delete(sock));
      });
      connections.set(s, open);
      s.once("error", reject);
      s.listen(port, host, () => {
        s.off("error", reject);
        resolve(s);
      });
    });

  // Stop accepting at once; let in-flight requests finish within graceMs, then cut them.
  // Their responses say "Connection: close" so clients do not keep talking to the old address.
  const retire = (s: http.Server, graceMs: number) =>
    new Promise<void>((resolve) => {
      for (const sock of connections.get(s) ?? []) {
        const res = sock[kRes];
        if (res && !res.headersSent) res.setHeader("connection", "close");
      }
      const sweep = setInterval(() => s.closeIdleConnections(), 50);
      const cut = setTimeout(() => s.closeAllConnections(), graceMs);
      sweep.unref();
      cut.unref();
      s.close(() => {
        clearTimeout(cut);
        clearInterval(sweep);
        resolve();
      });
      s.closeIdleConnections();
    });

  return {
    address: () => addr,
    async bind(host, port) {
      const old = server;
      let next: http.Server;
      if (old && addr && port !== 0 && port === addr.port) {
        // Same port on another address: free it first (0.0.0.0 and 127.0.0.1 collide), and
        // go back to the old address if the new one cannot be had.
        const prev = addr;
        void retire(old, 5000);
        try {
          next = await listen(host, port);
        } catch (e) {
          server = await listen(prev.host, prev.port).catch(() => null);
          if (!server) addr = null;
          throw e;
        }
      } else {
        next = await listen(host, port);
        if (old) void retire(old, 5000);
      }
      server = next;
      addr = { host, port: (next.address() as AddressInfo).port };
      log.info("listening", { url: urlOf(addr) });
      onBound(addr);
      return addr;
    },
    async close(graceMs) {
      const s = server;
      server = null;
      if (s) await retire(s, graceMs);
    },
  };
}

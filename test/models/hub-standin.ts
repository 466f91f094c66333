// A loopback stand-in of the Hugging Face hub endpoints node-llama-cpp and svc use:
//   GET  /v2/<user>/<repo>/manifests/<tag>     -> {ggufFile: {rfilename}} (the llama.cpp manifest)
//   HEAD /<user>/<repo>/resolve/<branch>/<file> -> size, Accept-Ranges, X-Linked-Size, X-Linked-Etag
//   GET  the same, with Range support
// It counts the body bytes it sends (ranged GETs: the stand-in always offers ranges), can hold a transfer after some bytes (so a test can look at
// progress, or kill svc mid-download), and can lie about a file's size or digest.
import { createHash } from "node:crypto";
import http from "node:http";
import type { AddressInfo } from "node:net";

export interface HubFile {
  bytes: Buffer;
  /** advertise this SHA-256 instead of the real one */
  advertisedSha256?: string;
  /** advertise this size (X-Linked-Size) instead of the real one */
  advertisedSize?: number;
  /** answer HEADs and whole-file probes with this Content-Length (no body is sent with either) */
  advertisedLength?: number;
}

export interface HubStandin {
  url: string;
  /** "<user>/<repo>/<file>" -> file */
  files: Map<string, HubFile>;
  /** "<user>/<repo>:<TAG>" -> file name in the repo */
  manifests: Map<string, string>;
  /** body bytes sent, per file path */
  sent: Map<string, number>;
  /** Range headers asked, per file path ("" for a whole-file GET) */
  ranges: Map<string, string[]>;
  /** authorization headers seen */
  auth: string[];
  /** every request, as "METHOD /path" */
  requests: string[];
  /** while set, GETs send nothing past this offset of a file (the transfer waits) */
  holdAt?: number;
  release(): void;
  close(): Promise<void>;
}

export const sha256 = (b: Buffer) => createHash("sha256").update(b).digest("hex");

export async function startHub(): Promise<HubStandin> {
  const waiting = new Set<() => void>();
  const sockets = new Set<import("node:net").Socket>();
  const hub: HubStandin = {
    url: "",
    files: new Map(),
    manifests: new Map(),
    sent: new Map(),
    ranges: new Map(),
    auth: [],
    requests: [],
    release() {
      hub.holdAt = undefined;
      for (const w of [...waiting]) w();
      waiting.clear();
    },
    close: async () => {
      for (const s of sockets) s.destroy();
      await new Promise((r) => server.close(r));
    },
  };
  const server = http.createServer(async (req, res) => {
    if (req.headers.authorization) hub.auth.push(req.headers.authorization);
    hub.requests.push(`${req.method} ${req.url}`);
    const u = new URL(req.url ?? "/", "http://x");
    const manifest = /^\/v2\/([^/]+)\/([^/]+)\/manifests\/([^/]+)$/.exec(u.pathname);
    if (manifest) {
      const [, user, repo, tag] = manifest.map(decodeURIComponent) as [string, string, string, string];
      const file = hub.manifests.get(`${user}/${repo}:${tag.toUpperCase()}`);
      if (!file) return void res.writeHead(404).end();
      res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify({ ggufFile: { rfilename: file } }));
      return;
    }
    const resolve = /^\/([^/]+)\/([^/]+)\/resolve\/[^/]+\/(.+)$/.exec(u.pathname);
    const key = resolve ? resolve.slice(1).map(decodeURIComponent).join("/") : "";
    const f = hub.files.get(key);
    if (!f) return void res.writeHead(404).end();
    const size = f.bytes.length;
    const common = {
      "accept-ranges": "bytes",
      "x-linked-size": String(f.advertisedSize ?? size),
      "x-linked-etag": `"${f.advertisedSha256 ?? sha256(f.bytes)}"`,
      "content-type": "application/octet-stream",
    };
    const probeLength = String(f.advertisedLength ?? size);
    if (req.method === "HEAD") return void res.writeHead(200, { ...common, "content-length": probeLength }).end();
    const range = /^bytes=(\d+)-(\d*)$/.exec(req.headers.range ?? "");
    hub.ranges.set(key, [...(hub.ranges.get(key) ?? []), req.headers.range ?? ""]);
    const start = range ? Number(range[1]) : 0;
    const end = range && range[2] ? Math.min(Number(range[2]) + 1, size) : size;
    // a GET without Range is ipull's size probe (it reads the headers, never the body, and then
    // asks for ranges): answer the headers and hold the body, so `sent` counts delivered data only
    if (!range) {
      res.writeHead(200, { ...common, "content-length": probeLength });
      res.flushHeaders();
      await new Promise((r) => res.once("close", r));
      return;
    }
    res.writeHead(range ? 206 : 200, { ...common, "content-length": String(end - start), ...(range ? { "content-range": `bytes ${start}-${end - 1}/${size}` } : {}) });
    // send in 64 KiB pieces, waiting at holdAt while it is set
    for (let at = start; at < end; ) {
      if (hub.holdAt !== undefined && at >= hub.holdAt) {
        await new Promise<void>((r) => {
          waiting.add(r);
          res.once("close", r);
        });
        if (res.destroyed) return;
        continue;
      }
      const stop = Math.min(end, at + 65536, hub.holdAt !== undefined && hub.holdAt > at ? hub.holdAt : end);
      const piece = f.bytes.subarray(at, stop);
      if (res.destroyed) return;
      const ok = res.write(piece);
      hub.sent.set(key, (hub.sent.get(key) ?? 0) + piece.length);
      at = stop;
      if (!ok) await new Promise((r) => res.once("drain", r));
    }
    res.end();
  });
  server.on("connection", (s) => {
    sockets.add(s);
    s.on("close", () => sockets.delete(s));
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  hub.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/`;
  return hub;
}

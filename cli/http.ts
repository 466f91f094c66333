// The CLI's requests to its svc (http on loopback, or whatever server.json names) with node:http:
// the global fetch loads undici and compiles its HTTP parser (WebAssembly) on first use, which
// cost `svc status`/`svc config plan` ~0.1 s of their start-up. https URLs still use fetch.
import type { IncomingMessage } from "node:http";

export interface HttpAnswer {
  status: number;
  text: string;
}

/** A request; rejects with an Error whose `code` is the system's (ECONNREFUSED, ...). */
export async function request(url: string, opts: { method?: string; headers?: Record<string, string>; body?: string; timeoutMs?: number } = {}): Promise<HttpAnswer> {
  const u = new URL(url);
  if (u.protocol !== "http:") {
    return fetch(url, { method: opts.method, headers: opts.headers, body: opts.body, signal: opts.timeoutMs ? AbortSignal.timeout(opts.timeoutMs) : undefined }).then(
      async (r) => ({ status: r.status, text: await r.text() }),
      (e) => Promise.reject(Object.assign(new Error(String(e?.message ?? e)), { code: e?.cause?.code ?? e?.name })),
    );
  }
  // node:http (with net and the parser) loads with the first request, not with every command
  const http = await import("node:http");
  return new Promise((resolve, reject) => {
    const req = http.request(u, { method: opts.method ?? "GET", headers: { ...opts.headers, ...(opts.body !== undefined ? { "content-length": String(Buffer.byteLength(opts.body)) } : {}) }, agent: false }, (res: IncomingMessage) => {
      const chunks: Buffer[] = [];
      res.on("data", (c: Buffer) => chunks.push(c));
      res.on("end", () => resolve({ status: res.statusCode ?? 0, text: Buffer.concat(chunks).toString("utf8") }));
      res.on("error", reject);
    });
    if (opts.timeoutMs) req.setTimeout(opts.timeoutMs, () => req.destroy(Object.assign(new Error("timed out"), { code: "TimeoutError" })));
    req.on("error", reject);
    req.end(opts.body);
  });
}

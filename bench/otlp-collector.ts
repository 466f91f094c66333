// The benches' loopback OTLP/HTTP collector as its own process, as a real deployment has it (a
// collector is another process or host): it accepts trace exports, counts posts and bytes, and
// answers 200 with an empty ExportTraceServiceResponse (zero bytes of protobuf) without decoding.
// Started on core 0 (the load generator's and stand-in's side), never on svc's pinned core, so
// its work does not compete with the svc it measures nor sit in the load generator's event loop.
//   node --import tsx bench/otlp-collector.ts   (prints its port; GET /count → {"posts","bytes"})
import http from "node:http";
import type { ChildProcess } from "node:child_process";

/** Start the collector on core 0; its URL, the counts so far, and the process to stop. */
export async function startCollector(): Promise<{ url: string; proc: ChildProcess; counts(): Promise<{ posts: number; bytes: number }> }> {
  const { firstLine, start } = await import("./processes");
  const proc = start(0, process.execPath, ["--import", "tsx", "bench/otlp-collector.ts"]);
  const url = `http://127.0.0.1:${Number(await firstLine(proc))}`;
  return { url, proc, counts: async () => (await (await fetch(`${url}/count`)).json()) as { posts: number; bytes: number } };
}

if (process.argv[1]?.endsWith("otlp-collector.ts")) {
  let posts = 0;
  let bytes = 0;
  const server = http.createServer((req, res) => {
    if (req.method === "GET") return void res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify({ posts, bytes }));
    req.on("data", (c: Buffer) => { bytes += c.length; });
    req.on("end", () => {
      posts++;
      res.writeHead(200, { "content-type": "application/x-protobuf", "content-length": 0 }).end();
    });
  });
  server.keepAliveTimeout = 30_000;
  server.listen(0, "127.0.0.1", () => console.log((server.address() as import("node:net").AddressInfo).port));
}

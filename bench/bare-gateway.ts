// The bare Node gateway: what Node itself allows for the gateway's job, as a path beside svc in
// `npm run bench -- gateway`. node:http, parse the JSON body, forward it with an undici Pool,
// answer with the upstream's body; no key, policy, limits or audit.
//   node --import tsx bench/bare-gateway.ts <upstream base URL>   (prints its port)
import http from "node:http";
import { Pool } from "undici";

const upstream = new URL(process.argv[2] ?? "http://127.0.0.1:1/v1");
const pool = new Pool(upstream.origin, { connections: 128, pipelining: 1 });
const chatPath = `${upstream.pathname.replace(/\/$/, "")}/chat/completions`;
const headers = { "content-type": "application/json", authorization: "Bearer sk-upstream-bench" };

const server = http.createServer((req, res) => {
  const chunks: Buffer[] = [];
  req.on("data", (c: Buffer) => chunks.push(c));
  req.on("end", () => {
    let parsed: unknown;
    try {
      parsed = JSON.parse(Buffer.concat(chunks).toString("utf8"));
    } catch {
      res.writeHead(400).end();
      return;
    }
    pool
      .request({ method: "POST", path: chatPath, headers, body: JSON.stringify(parsed) })
      .then(async (up) => {
        const body = Buffer.from(await up.body.arrayBuffer());
        res.writeHead(up.statusCode, { "content-type": "application/json", "content-length": body.length });
        res.end(body);
      })
      .catch(() => {
        if (!res.headersSent) res.writeHead(502);
        res.end();
      });
  });
});
server.keepAliveTimeout = 60_000;
server.listen(Number(process.env.PORT ?? 0), "127.0.0.1", () => {
  const addr = server.address();
  process.stdout.write(`${typeof addr === "object" && addr ? addr.port : 0}\n`);
});
process.on("SIGTERM", () => server.close(() => process.exit(0)));

// Dev tool (not a test): what one SSE event costs a bare node:http server on this machine, the floor
// under svc's per-token work when it streams (bench/inference.ts compares svc streaming over HTTP
// with raw node-llama-cpp decoding in process, which writes nothing). The server is pinned to core
// 1 as svc is there, the reading client to core 0; one event a millisecond (a token takes ~3.5 ms),
// against the same timer loop writing nothing.
// node --import tsx bench/dev/sse-write-cost.ts [events]
import http from "node:http";
import type { AddressInfo } from "node:net";
import { pinSelf, start } from "../processes";

const N = Number(process.argv[2] ?? 3000);
const EVENT = `data: ${JSON.stringify({ id: "cmpl-0123456789abcdef", object: "text_completion", created: 1764400000, model: "medium", choices: [{ index: 0, text: " hello", logprobs: null, finish_reason: null }] })}\n\n`;

/** CPU (µs, this process) a tick of a 1 ms timer loop of N ticks, writing an event each tick or not. */
function round(write: boolean): Promise<number> {
  return new Promise((done) => {
    const server = http.createServer((req, res) => {
      res.writeHead(200, { "content-type": "text/event-stream" });
      req.socket.setNoDelay(true);
      let i = 0;
      const c0 = process.cpuUsage();
      const tick = () => {
        if (i++ >= N) {
          const c = process.cpuUsage(c0);
          res.end();
          server.close();
          return done((c.user + c.system) / N);
        }
        if (write) res.write(EVENT);
        setTimeout(tick, 1);
      };
      tick();
    });
    server.listen(0, "127.0.0.1", () => {
      const { port } = server.address() as AddressInfo;
      start(0, process.execPath, ["-e", `fetch("http://127.0.0.1:${port}/").then(async (r) => { for await (const _ of r.body); })`]);
    });
  });
}

pinSelf(1);
const rows: string[] = [];
for (let r = 0; r < 3; r++) {
  const quiet = await round(false);
  const writing = await round(true);
  rows.push(`round ${r + 1}: ${(writing - quiet).toFixed(1)} µs of CPU an event (${writing.toFixed(1)} writing, ${quiet.toFixed(1)} not)`);
}
console.log(rows.join("\n"));

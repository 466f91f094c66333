// A loopback stand-in for a cloud provider (OpenAI chat completions), run as its own process
// so the benchmark client, svc and the upstream do not share an event loop.
import http from "node:http";

const body = JSON.stringify({
  id: "chatcmpl-bench",
  object: "chat.completion",
  created: 1700000000,
  model: "bench-model",
  choices: [{ index: 0, message: { role: "assistant", content: "Hello from the stand-in upstream." }, finish_reason: "stop" }],
  usage: { prompt_tokens: 12, completion_tokens: 8, total_tokens: 20 },
});

const server = http.createServer((req, res) => {
  req.resume();
  req.on("end", () => {
    res.writeHead(200, { "content-type": "application/json", "content-length": Buffer.byteLength(body) });
    res.end(body);
  });
});
server.keepAliveTimeout = 60_000;
server.listen(Number(process.env.PORT ?? 0), "127.0.0.1", () => {
  const addr = server.address();
  process.stdout.write(`${typeof addr === "object" && addr ? addr.port : 0}\n`);
});
process.on("SIGTERM", () => server.close(() => process.exit(0)));

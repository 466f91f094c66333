// A stand-in for an OpenAI-compatible provider, so the examples run on a machine with no provider
// account and no network: `node examples/standin/upstream.mjs` listens on 127.0.0.1:8081 (PORT
// sets another port; 0 picks a free one and prints it). examples/gateway and examples/agents point
// their Provider at it. It answers every chat with the same sentence, streamed or not, with usage,
// so the gateway's limits, cost and audit log have real numbers to work with. Dependency-free.
import http from "node:http";

const MODELS = ["gpt-4o-mini", "gpt-4o"];
const ANSWER = "Hello from the stand-in upstream.";

function json(res, status, body) {
  const text = JSON.stringify(body);
  res.writeHead(status, { "content-type": "application/json", "content-length": Buffer.byteLength(text) });
  res.end(text);
}

/** Rough token counts: a word or a punctuation run is a token (good enough for cost examples). */
const tokens = (text) => (String(text).match(/\w+|[^\s\w]+/g) ?? []).length;

function promptTokens(messages) {
  return messages.reduce((n, m) => n + 4 + tokens(typeof m.content === "string" ? m.content : JSON.stringify(m.content ?? "")), 0);
}

function chat(req, res, body) {
  const model = typeof body.model === "string" ? body.model : MODELS[0];
  if (!Array.isArray(body.messages)) return json(res, 400, { error: { message: "messages must be an array", type: "invalid_request_error", code: null, param: "messages" } });
  const id = `chatcmpl-standin-${Date.now().toString(36)}`;
  const created = Math.floor(Date.now() / 1000);
  const usage = { prompt_tokens: promptTokens(body.messages), completion_tokens: tokens(ANSWER), total_tokens: 0 };
  usage.total_tokens = usage.prompt_tokens + usage.completion_tokens;
  if (!body.stream) {
    return json(res, 200, { id, object: "chat.completion", created, model, choices: [{ index: 0, message: { role: "assistant", content: ANSWER }, finish_reason: "stop" }], usage });
  }
  res.writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-cache" });
  const chunk = (delta, finish, extra = {}) => res.write(`data: ${JSON.stringify({ id, object: "chat.completion.chunk", created, model, choices: [{ index: 0, delta, finish_reason: finish }], ...extra })}\n\n`);
  chunk({ role: "assistant", content: "" }, null);
  for (const piece of ANSWER.split(/(?<= )/)) chunk({ content: piece }, null);
  chunk({}, "stop", body.stream_options?.include_usage ? { usage } : {});
  res.end("data: [DONE]\n\n");
}

const server = http.createServer((req, res) => {
  const chunks = [];
  req.on("data", (c) => chunks.push(c));
  req.on("end", () => {
    const path = (req.url ?? "/").split("?")[0].replace(/\/+$/, "");
    if (req.method === "GET" && path === "/v1/models") {
      return json(res, 200, { object: "list", data: MODELS.map((id) => ({ id, object: "model", created: 0, owned_by: "standin" })) });
    }
    if (req.method === "POST" && path === "/v1/chat/completions") {
      let body;
      try {
        body = JSON.parse(Buffer.concat(chunks).toString("utf8"));
      } catch {
        return json(res, 400, { error: { message: "the body is not JSON", type: "invalid_request_error", code: null, param: null } });
      }
      return chat(req, res, body ?? {});
    }
    json(res, 404, { error: { message: `the stand-in upstream has no ${req.method} ${path}`, type: "not_found_error", code: null, param: null } });
  });
});

const port = Number(process.env.PORT ?? 8081);
server.listen(port, "127.0.0.1", () => {
  const a = server.address();
  process.stdout.write(`stand-in upstream listening on http://127.0.0.1:${a.port}/v1\n`);
});
for (const sig of ["SIGINT", "SIGTERM"]) process.on(sig, () => server.close(() => process.exit(0)));

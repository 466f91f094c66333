// Loopback stand-ins for upstream providers, for the protocol suites: an OpenAI-compatible
// /chat/completions and an Anthropic /v1/messages (+ /v1/messages/count_tokens), mounted under
// a chosen path prefix. Text is "echo: <last user text>"; Anthropic stop_sequences cut it the way
// the real API does (stop_reason "stop_sequence" + stop_sequence). A model named "slow" streams
// one word every 100 ms for a minute, so a test can act while a stream is in flight.
import { createServer, type IncomingHttpHeaders, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";

export interface SeenRequest {
  method: string;
  path: string;
  headers: IncomingHttpHeaders;
  body: any;
  /** the connection closed before the answer was complete (the caller cancelled) */
  closedEarly: boolean;
  /** when the connection closed (performance.now()) */
  closedAt?: number;
}

export const COUNT_TOKENS_ANSWER = 4242;

function json(res: ServerResponse, status: number, body: unknown) {
  const s = JSON.stringify(body);
  res.writeHead(status, { "content-type": "application/json", "content-length": Buffer.byteLength(s) });
  res.end(s);
}

function lastUserText(body: any): string {
  const last = [...(body.messages ?? [])].reverse().find((x: any) => x.role === "user");
  if (typeof last?.content === "string") return last.content;
  return Array.isArray(last?.content) ? last.content.map((b: any) => b.text ?? "").join("") : "";
}

/** Words of the answer, written `delayMs` apart until done or the client leaves. */
async function writeSlowly(res: ServerResponse, words: string[], delayMs: number, frame: (w: string) => string): Promise<boolean> {
  for (const w of words) {
    if (res.destroyed) return false;
    res.write(frame(w));
    if (delayMs) await new Promise((r) => setTimeout(r, delayMs));
  }
  return !res.destroyed;
}

export async function standIn(opts: { prefix?: string } = {}) {
  const prefix = opts.prefix ?? "/v1";
  const requests: SeenRequest[] = [];
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c) => chunks.push(c));
    req.on("end", () => void answer(req.method ?? "GET", req.url ?? "", req.headers, Buffer.concat(chunks).toString("utf8"), res));
  });

  async function answer(method: string, url: string, headers: IncomingHttpHeaders, raw: string, res: ServerResponse) {
    let body: any = {};
    try {
      body = raw ? JSON.parse(raw) : {};
    } catch {
      /* not JSON */
    }
    const seen: SeenRequest = { method, path: url, headers, body, closedEarly: false };
    requests.push(seen);
    // the client (svc) went away before the answer was finished: a cancelled upstream call
    res.on("close", () => {
      seen.closedEarly = !res.writableFinished;
      seen.closedAt = performance.now();
    });
    if (!url.startsWith(prefix + "/")) return json(res, 404, { error: { message: `no route ${url}` } });
    const route = url.slice(prefix.length);
    const slow = body.model === "slow";
    const text = slow ? Array.from({ length: 600 }, (_, i) => `w${i} `).join("") : `echo: ${lastUserText(body)}`;
    const delay = slow ? 100 : 0;
    const words = text.split(/(?<= )/);

    if (route === "/models" && method === "GET") return json(res, 200, { object: "list", data: [{ id: "up-model", object: "model", created: 1, owned_by: "x" }] });
    if (route === "/messages/count_tokens") return json(res, 200, { input_tokens: COUNT_TOKENS_ANSWER });
    if (route === "/messages") {
      // Anthropic: the first stop sequence that occurs ends the text, as the API reports it
      let out = text;
      let stopSeq: string | null = null;
      let at = Infinity;
      for (const s of body.stop_sequences ?? []) {
        const i = text.indexOf(s);
        if (i >= 0 && i < at) [at, stopSeq] = [i, s];
      }
      if (stopSeq !== null) out = text.slice(0, at);
      const stopReason = stopSeq !== null ? "stop_sequence" : "end_turn";
      if (!body.stream) {
        return json(res, 200, { id: "msg_up", type: "message", role: "assistant", model: body.model, content: [{ type: "text", text: out }], stop_reason: stopReason, stop_sequence: stopSeq, usage: { input_tokens: 10, output_tokens: 5 } });
      }
      res.writeHead(200, { "content-type": "text/event-stream" });
      const ev = (type: string, data: unknown) => `event: ${type}\ndata: ${JSON.stringify({ type, ...(data as object) })}\n\n`;
      res.write(ev("message_start", { message: { id: "msg_up", type: "message", role: "assistant", content: [], usage: { input_tokens: 10, output_tokens: 1 } } }));
      res.write(ev("content_block_start", { index: 0, content_block: { type: "text", text: "" } }));
      const ok = await writeSlowly(res, out.split(/(?<= )/), delay, (w) => ev("content_block_delta", { index: 0, delta: { type: "text_delta", text: w } }));
      if (!ok) return;
      res.write(ev("content_block_stop", { index: 0 }));
      res.write(ev("message_delta", { delta: { stop_reason: stopReason, stop_sequence: stopSeq }, usage: { output_tokens: 5 } }));
      res.end(ev("message_stop", {}));
      return;
    }
    if (route === "/chat/completions") {
      const base = { id: "chatcmpl-up", object: "chat.completion.chunk", created: 1, model: body.model };
      if (!body.stream) {
        return json(res, 200, { ...base, object: "chat.completion", choices: [{ index: 0, message: { role: "assistant", content: text }, finish_reason: "stop" }], usage: { prompt_tokens: 10, completion_tokens: 5, total_tokens: 15 } });
      }
      res.writeHead(200, { "content-type": "text/event-stream" });
      const ok = await writeSlowly(res, words, delay, (w) => `data: ${JSON.stringify({ ...base, choices: [{ index: 0, delta: { content: w }, finish_reason: null }] })}\n\n`);
      if (!ok) return;
      res.write(`data: ${JSON.stringify({ ...base, choices: [{ index: 0, delta: {}, finish_reason: "stop" }], usage: { prompt_tokens: 10, completion_tokens: 5, total_tokens: 15 } })}\n\n`);
      res.end("data: [DONE]\n\n");
      return;
    }
    json(res, 404, { error: { message: `no route ${url}` } });
  }

  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  const port = (server.address() as AddressInfo).port;
  return {
    requests,
    origin: `http://127.0.0.1:${port}`,
    baseUrl: `http://127.0.0.1:${port}${prefix}`,
    async close() {
      server.closeAllConnections();
      await new Promise<void>((r) => server.close(() => r()));
    },
  };
}

export type StandIn = Awaited<ReturnType<typeof standIn>>;

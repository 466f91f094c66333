// A scripted loopback stand-in for an OpenAI-compatible provider: each chat request is answered
// by the script registered for its model, with real OpenAI-shape tool calls, as one JSON body or
// as SSE chunks (arguments split across several deltas, the way OpenAI streams them).
import { createServer, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";

export interface Turn {
  text?: string;
  calls?: Array<{ name: string; args: Record<string, unknown> | string }>;
}

export interface ChatBody {
  model: string;
  messages: Array<{ role: string; content?: string | null; tool_calls?: any[]; tool_call_id?: string }>;
  tools?: Array<{ type: string; function: { name: string } }>;
  tool_choice?: unknown;
  stream?: boolean;
  max_tokens?: number;
}

export type Script = (body: ChatBody, turn: number) => Turn;

/** The content of the last tool message (what the previous tool call returned). */
export const lastTool = (b: ChatBody) => [...b.messages].reverse().find((m) => m.role === "tool")?.content ?? "";
/** How many assistant turns the conversation already has (0 on the first call). */
export const turnOf = (b: ChatBody) => b.messages.filter((m) => m.role === "assistant").length;

export async function scriptedProvider() {
  const scripts = new Map<string, Script>();
  const requests: ChatBody[] = [];
  let callSeq = 0;
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c) => chunks.push(c));
    req.on("end", () => {
      const body = JSON.parse(Buffer.concat(chunks).toString("utf8")) as ChatBody;
      requests.push(body);
      const script = scripts.get(body.model);
      if (!script) return json(res, 404, { error: { message: `no script for model ${body.model}` } });
      const t = script(body, turnOf(body));
      const calls = (t.calls ?? []).map((c) => ({ id: `call_${++callSeq}`, name: c.name, args: typeof c.args === "string" ? c.args : JSON.stringify(c.args) }));
      const usage = { prompt_tokens: 20, completion_tokens: 10, total_tokens: 30 };
      const finish = calls.length ? "tool_calls" : "stop";
      if (!body.stream) {
        const message: Record<string, unknown> = { role: "assistant", content: t.text ?? (calls.length ? null : "") };
        if (calls.length) message.tool_calls = calls.map((c) => ({ id: c.id, type: "function", function: { name: c.name, arguments: c.args } }));
        return json(res, 200, { id: "chatcmpl-script", object: "chat.completion", created: 1, model: body.model, choices: [{ index: 0, message, finish_reason: finish }], usage });
      }
      res.writeHead(200, { "content-type": "text/event-stream" });
      const base = { id: "chatcmpl-script", object: "chat.completion.chunk", created: 1, model: body.model };
      const send = (delta: unknown, finish_reason: string | null = null) => res.write(`data: ${JSON.stringify({ ...base, choices: [{ index: 0, delta, finish_reason }] })}\n\n`);
      send({ role: "assistant", content: "" });
      for (const w of (t.text ?? "").split(/(?<= )/)) if (w) send({ content: w });
      calls.forEach((c, index) => {
        send({ tool_calls: [{ index, id: c.id, type: "function", function: { name: c.name, arguments: "" } }] });
        const mid = Math.ceil(c.args.length / 2);
        send({ tool_calls: [{ index, function: { arguments: c.args.slice(0, mid) } }] });
        send({ tool_calls: [{ index, function: { arguments: c.args.slice(mid) } }] });
      });
      send({}, finish);
      res.write(`data: ${JSON.stringify({ ...base, choices: [], usage })}\n\n`);
      res.end("data: [DONE]\n\n");
    });
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  const port = (server.address() as AddressInfo).port;
  return {
    requests,
    baseUrl: `http://127.0.0.1:${port}/v1`,
    script(model: string, s: Script) {
      scripts.set(model, s);
    },
    async close() {
      server.closeAllConnections();
      await new Promise<void>((r) => server.close(() => r()));
    },
  };
}

export type ScriptedProvider = Awaited<ReturnType<typeof scriptedProvider>>;

function json(res: ServerResponse, status: number, body: unknown) {
  const s = JSON.stringify(body);
  res.writeHead(status, { "content-type": "application/json", "content-length": Buffer.byteLength(s) });
  res.end(s);
}

/** Parse an SSE body into [{event, data}]. */
export function parseSse(text: string): Array<{ event: string; data: any }> {
  return text
    .split("\n\n")
    .filter((b) => b.trim())
    .map((b) => {
      const event = /^event: (.*)$/m.exec(b)?.[1] ?? "message";
      const data = /^data: (.*)$/m.exec(b)?.[1];
      return { event, data: data ? JSON.parse(data) : undefined };
    });
}

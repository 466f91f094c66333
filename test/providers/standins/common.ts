// Shared plumbing of the vendor stand-ins: a loopback HTTP server that records requests, and
// the deterministic "model" behind every vendor: it answers "echo: <last user text>", or, when
// the request forces a tool call (any tool, or a named one), or offers tools and the user asks
// about the weather (the Ollama protocol has no tool_choice: there the model decides), calls the
// tool with {"city":"Paris"}.
// Usage is always 11 prompt and 7 completion tokens.
import { createServer, type IncomingHttpHeaders, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";

export const PROMPT_TOKENS = 11;
export const COMPLETION_TOKENS = 7;
export const TOOL_ARGS = { city: "Paris" };

export interface Recorded {
  method: string;
  url: string;
  headers: IncomingHttpHeaders;
  raw: string;
  body: any;
}

export type Handler = (req: IncomingMessage, res: ServerResponse, rec: Recorded) => void | Promise<void>;

export interface Loopback {
  port: number;
  origin: string;
  requests: Recorded[];
  close(): Promise<void>;
}

export async function loopback(handler: Handler): Promise<Loopback> {
  const requests: Recorded[] = [];
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c) => chunks.push(c));
    req.on("end", () => {
      const raw = Buffer.concat(chunks).toString("utf8");
      let body: any;
      try {
        body = raw ? JSON.parse(raw) : undefined;
      } catch {
        body = undefined;
      }
      const rec = { method: req.method ?? "", url: req.url ?? "", headers: req.headers, raw, body };
      requests.push(rec);
      Promise.resolve(handler(req, res, rec)).catch((e) => {
        if (!res.headersSent) json(res, 500, { error: { message: String(e?.message ?? e) } });
        else res.destroy();
      });
    });
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  const port = (server.address() as AddressInfo).port;
  return {
    port,
    origin: `http://127.0.0.1:${port}`,
    requests,
    async close() {
      server.closeAllConnections();
      await new Promise<void>((r) => server.close(() => r()));
    },
  };
}

export function json(res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}) {
  const s = JSON.stringify(body);
  res.writeHead(status, { "content-type": "application/json", "content-length": String(Buffer.byteLength(s)), ...headers });
  res.end(s);
}

/** What the stand-in model does with a request, decided from vendor-neutral facts. */
export function decide(lastUserText: string, forced: string | undefined, offered: string[] = []): { text: string } | { tool: string } {
  if (forced) return { tool: forced };
  if (offered.length && /weather/i.test(lastUserText)) return { tool: offered[0] };
  return { text: `echo: ${lastUserText}` };
}

/** Split text in a few pieces for streaming. */
export const pieces = (text: string) => text.split(/(?<= )/);

/** Standard base64 (what the vendors' JSON APIs take for image bytes). */
export const isBase64 = (v: unknown) => typeof v === "string" && v.length > 0 && v.length % 4 === 0 && /^[A-Za-z0-9+/]*={0,2}$/.test(v);

/** Text of an OpenAI-shaped message content: a string, or the text parts of a parts array. */
export const openAIText = (c: unknown) => (typeof c === "string" ? c : Array.isArray(c) ? c.map((p: any) => (p?.type === "text" ? p.text : "")).join("") : "");

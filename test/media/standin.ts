// A loopback stand-in for a media-capable provider (OpenAI-style paths under /v1): transcription,
// image generation / edits / upscale, a "slow" image model that waits until the request is
// aborted, video quote / generation / job / content, and a credit balance.
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";

export interface Seen {
  method: string;
  path: string;
  auth?: string;
  contentType?: string;
  body: Buffer;
}

export async function mediaStandin(credential: string) {
  const seen: Seen[] = [];
  let polls = 0;
  let slowAborted = false;
  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    const chunks: Buffer[] = [];
    req.on("data", (c) => chunks.push(c));
    req.on("end", () => {
      const body = Buffer.concat(chunks);
      const path = req.url ?? "/";
      seen.push({ method: req.method ?? "", path, auth: req.headers.authorization, contentType: req.headers["content-type"], body });
      const json = (status: number, j: unknown) => {
        res.writeHead(status, { "content-type": "application/json" });
        res.end(JSON.stringify(j));
      };
      if (req.headers.authorization !== `Bearer ${credential}`) return json(401, { error: { message: "bad credential" } });
      if (path === "/v1/audio/transcriptions") return json(200, { text: "hello from the stand-in" });
      if (path === "/v1/images/generations") {
        const b = JSON.parse(body.toString());
        if (b.model === "slow-image") {
          req.socket.on("close", () => (slowAborted = true));
          return; // never answers: svc must abort it on cancel
        }
        if (b.model === "broken") return json(500, { error: { message: `exploded with ${credential}` } });
        return json(200, { created: 1, data: [{ b64_json: Buffer.from("png").toString("base64") }] });
      }
      if (path === "/v1/images/edits") return json(200, { created: 2, data: [{ url: "http://images.example/edited.png" }] });
      if (path === "/v1/images/upscale") return json(200, { created: 3, data: [{ url: "http://images.example/big.png" }] });
      if (path === "/v1/videos/quote") return json(200, { quote_id: "q1", price_usd: 0.42, seconds: JSON.parse(body.toString()).seconds ?? 4 });
      if (path === "/v1/videos/generations") return json(200, { id: "up-1", status: "queued" });
      if (path === "/v1/videos/jobs/up-1") return json(200, { id: "up-1", status: ++polls > 1 ? "completed" : "processing" });
      if (path === "/v1/videos/jobs/up-1/content") {
        res.writeHead(200, { "content-type": "video/mp4" });
        return res.end(Buffer.from("MP4DATA"));
      }
      if (path === "/v1/credits") return json(200, { data: { total_credits: 10, total_usage: 2.5 } });
      json(404, { error: { message: `no route ${path}` } });
    });
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  return {
    seen,
    baseUrl: `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`,
    slowAborted: () => slowAborted,
    async close() {
      server.closeAllConnections();
      await new Promise<void>((r) => server.close(() => r()));
    },
  };
}

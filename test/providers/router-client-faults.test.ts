// The router through svc, with faults that are the client's, not the deployment's: a request the
// provider refuses (400) and a client that leaves in the middle of a streamed answer. Neither may
// count toward the deployment's cooldown (docs/providers.md: failures are 429s, 5xx, timeouts,
// refused connections), or a few of them would take a healthy deployment out for every client.
// The upstream is a small loopback server: "bad" gets a 400, a stream of "hold" sends its first
// chunk and then stays open, anything else is answered.
import { createServer, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startEnv, type Env } from "../gateway/fixtures";
import { eventually, until } from "../helpers/http";

let env: Env;
let server: Server;
let baseUrl: string;
const open = new Set<ServerResponse>();
let upstreamRequests = 0;

const chat = (model: string, content: string, extra: Record<string, unknown> = {}, signal?: AbortSignal) =>
  fetch(`${env.url}/v1/chat/completions`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ model, messages: [{ role: "user", content }], ...extra }), signal });

async function metric(name: string, model: string, provider: string): Promise<number | undefined> {
  const text = await (await fetch(`${env.url}/metrics`)).text();
  const line = text.split("\n").find((l) => l.startsWith(`${name}{`) && l.includes(`model="${model}"`) && l.includes(`provider="${provider}"`));
  return line ? Number(line.slice(line.lastIndexOf(" ") + 1)) : undefined;
}

beforeAll(async () => {
  server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c) => chunks.push(c));
    req.on("end", () => {
      upstreamRequests++;
      const body = JSON.parse(Buffer.concat(chunks).toString("utf8") || "{}");
      const content = body.messages?.[body.messages.length - 1]?.content;
      const send = (status: number, j: unknown) => {
        const s = JSON.stringify(j);
        res.writeHead(status, { "content-type": "application/json", "content-length": Buffer.byteLength(s) });
        res.end(s);
      };
      if (content === "bad") return send(400, { error: { message: "max_tokens is too large" } });
      if (content === "hold" && body.stream) {
        res.writeHead(200, { "content-type": "text/event-stream" });
        res.write(`data: ${JSON.stringify({ id: "c", object: "chat.completion.chunk", created: 1, model: body.model, choices: [{ index: 0, delta: { role: "assistant", content: "partial " }, finish_reason: null }] })}\n\n`);
        open.add(res);
        res.on("close", () => open.delete(res));
        return;
      }
      send(200, { id: "c", object: "chat.completion", created: 1, model: body.model, choices: [{ index: 0, message: { role: "assistant", content: `echo: ${content}` }, finish_reason: "stop" }], usage: { prompt_tokens: 3, completion_tokens: 2, total_tokens: 5 } });
    });
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`;
  env = await startEnv();
  const price = { inputPerMillion: 1, outputPerMillion: 1 };
  const router = { maxAttempts: 1, backoffMs: 0, maxWaitMs: 0, cooldown: { failures: 2, windowSeconds: 600, seconds: 600 } };
  await env.apply([
    { kind: "Provider", name: "cf-a", spec: { type: "openai", baseUrl, timeoutSeconds: 30, models: [{ name: "cf-m", ...price }] } },
    { kind: "Provider", name: "cf-b", spec: { type: "openai", baseUrl, timeoutSeconds: 30, models: [{ name: "cf-m", ...price }] } },
    { kind: "Model", name: "cf-refused", spec: { router: { ...router, deployments: [{ provider: "cf-a", model: "cf-m" }] } } },
    { kind: "Model", name: "cf-left", spec: { router: { ...router, deployments: [{ provider: "cf-b", model: "cf-m" }] } } },
  ]);
  await until(() => env.svc.svc.store.get("Model", "cf-left")?.status.conditions?.find((c) => c.type === "Ready")?.status === "True");
});
afterAll(async () => {
  await env?.stop();
  for (const r of open) r.destroy();
  server?.closeAllConnections();
  await new Promise<void>((r) => server?.close(() => r()) ?? r());
});

describe("router: the client's faults do not cool a deployment", () => {
  it("requests the provider refused (400) leave the deployment in service for the next client", async () => {
    for (let i = 0; i < 3; i++) {
      const r = await chat("cf-refused", "bad");
      expect(r.status).toBe(400);
      expect(((await r.json()) as any).error.code).toBe("invalid_request");
    }
    const ok = await chat("cf-refused", "hi");
    expect(ok.status).toBe(200);
    expect(((await ok.json()) as any).choices[0].message.content).toBe("echo: hi");
    expect(await metric("svc_router_deployment_cooldown_seconds", "cf-refused", "cf-a")).toBe(0);
  });

  it("clients that leave a streamed answer midway leave the deployment in service", async () => {
    for (let i = 0; i < 3; i++) {
      const ctl = new AbortController();
      const r = await chat("cf-left", "hold", { stream: true }, ctl.signal);
      expect(r.status).toBe(200);
      const reader = r.body!.getReader();
      const first = await reader.read(); // the answer has begun
      expect(new TextDecoder().decode(first.value)).toContain("partial");
      ctl.abort();
      await reader.closed.catch(() => undefined);
      await eventually(async () => (await metric("svc_router_deployment_in_flight", "cf-left", "cf-b")) === 0);
    }
    expect(await metric("svc_router_deployment_failures_total", "cf-left", "cf-b")).toBe(0);
    const ok = await chat("cf-left", "hi");
    expect(ok.status).toBe(200);
    expect(((await ok.json()) as any).choices[0].message.content).toBe("echo: hi");
  });
});

// boot/starting.ts: what a client sees between the bind and the full routes.
import http from "node:http";
import type { AddressInfo } from "node:net";
import { afterEach, describe, expect, it } from "vitest";
import { readiness, startingHandler } from "../../boot/starting";

let server: http.Server | undefined;
afterEach(() => new Promise<void>((r) => (server ? server.close(() => r()) : r())));

async function serve(h: http.RequestListener): Promise<string> {
  server = http.createServer(h);
  await new Promise<void>((r) => server!.listen(0, "127.0.0.1", r));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

function setup() {
  const ready = readiness();
  let release!: () => void;
  const step = ready.step("the engines", () => new Promise<void>((r) => (release = r)));
  const s = startingHandler({ revision: () => 7, readiness: ready, status: () => ({ objects: [], loading: ready.loading() }) });
  return { ready, s, step, release: () => release() };
}

describe("the handler while svc loads", () => {
  it("answers /health and /ready (503, saying what loads) and /admin/config/status on loopback", async () => {
    const { s, release, step } = setup();
    const url = await serve(s.handler);
    const health = await fetch(`${url}/health`);
    expect(health.status).toBe(200);
    expect(await health.json()).toEqual({ status: "ok", revision: 7, ready: false, loading: ["the engines"] });
    const ready = await fetch(`${url}/ready`);
    expect(ready.status).toBe(503);
    expect(await ready.json()).toEqual({ ready: false, loading: ["the engines"] });
    expect(await (await fetch(`${url}/admin/config/status`)).json()).toEqual({ objects: [], loading: ["the engines"] });
    release();
    await step;
  });

  it("holds other requests and serves them with the full handler once it is ready", async () => {
    const { s, release, step } = setup();
    const url = await serve(s.handler);
    const early = fetch(`${url}/v1/models`).then(async (r) => [r.status, await r.text()]);
    await new Promise((r) => setTimeout(r, 100));
    let gate!: () => void;
    s.ready((req, res) => res.end(`full ${req.url}`), new Promise<void>((r) => (gate = r)));
    // a request after ready() goes straight to the full handler; the held one waits for the release
    expect(await (await fetch(`${url}/later`)).text()).toBe("full /later");
    gate();
    expect(await early).toEqual([200, "full /v1/models"]);
    release();
    await step;
  });

  it("answers held and later requests 503 with the reason when start-up fails", async () => {
    const { s, release } = setup();
    const url = await serve(s.handler);
    const early = fetch(`${url}/v1/models`);
    await new Promise((r) => setTimeout(r, 100));
    s.failed("the store is locked");
    const r = await early;
    expect(r.status).toBe(503);
    expect(((await r.json()) as any).error.message).toBe("svc did not start: the store is locked");
    expect((await fetch(`${url}/v1/other`)).status).toBe(503);
    release();
  });
});

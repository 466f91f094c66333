// svc's listener moving to another port (a Server manifest's port change): a request in flight
// on the old address still gets its answer, that answer tells the client to close the connection
// ("connection: close"), an idle keep-alive connection is ended, and the old address stops
// accepting. boot/http-listener.ts keeps the response in flight on its connection for this.
import { afterAll, describe, expect, it } from "vitest";
import http from "node:http";
import { httpListener, type HttpListener } from "../../boot/http-listener";

const log = { info() {}, warn() {}, error() {}, debug() {} } as never;
let listener: HttpListener | undefined;
afterAll(async () => {
  await listener?.close(1000);
});

function get(port: number, agent: http.Agent, path: string): Promise<{ status: number; connection: string | undefined; body: string }> {
  return new Promise((resolve, reject) => {
    const r = http.get({ host: "127.0.0.1", port, path, agent }, (res) => {
      let body = "";
      res.setEncoding("utf8");
      res.on("data", (d) => (body += d));
      res.on("end", () => resolve({ status: res.statusCode!, connection: res.headers.connection, body }));
    });
    r.on("error", reject);
  });
}

describe("the listener moving to another port", () => {
  it("answers the request in flight with connection: close, ends idle connections, and stops accepting on the old port", async () => {
    const held: Array<() => void> = [];
    const handler: http.RequestListener = (req, res) => {
      const answer = () => res.end(`answered ${req.url}`);
      if (req.url === "/hold") held.push(answer);
      else answer();
    };
    listener = httpListener(handler, log, () => undefined, () => 60_000);
    const first = await listener.bind("127.0.0.1", 0);

    const busy = new http.Agent({ keepAlive: true, maxSockets: 1 });
    const idle = new http.Agent({ keepAlive: true, maxSockets: 1 });
    // a keep-alive connection that is idle when the listener moves
    expect(await get(first.port, idle, "/now")).toMatchObject({ status: 200, connection: "keep-alive" });
    const idleSocket = new Promise<void>((resolve) => {
      for (const list of Object.values(idle.freeSockets)) for (const s of list ?? []) s.once("close", () => resolve());
    });
    // and one whose request is in flight
    const inFlight = get(first.port, busy, "/hold");
    while (held.length === 0) await new Promise((r) => setTimeout(r, 10));

    const second = await listener.bind("127.0.0.1", 0);
    expect(second.port).not.toBe(first.port);
    await idleSocket; // the old listener ended the idle connection

    held[0]();
    expect(await inFlight).toEqual({ status: 200, connection: "close", body: "answered /hold" });
    // the new address serves; the old one no longer accepts
    expect((await get(second.port, new http.Agent(), "/now")).body).toBe("answered /now");
    await expect(get(first.port, new http.Agent(), "/now")).rejects.toMatchObject({ code: "ECONNREFUSED" });
    busy.destroy();
    idle.destroy();
  });
});

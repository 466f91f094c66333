// The reconciler lease (engines/cluster/lease.ts) when the holder's connection to PostgreSQL is cut
// without either side closing it cleanly (a network partition, a failover of PostgreSQL to a new
// primary): PostgreSQL ends the holder's session, so another replica takes the lease; the old
// holder must notice it lost it and stop its controllers rather than reconcile alongside the new
// holder for ever. A TCP proxy in front of PostgreSQL stands for the network: "cut" closes its
// PostgreSQL side and leaves the holder's side open and silent.
import net from "node:net";
import { describe, it, expect, afterAll } from "vitest";
import { missingServices, startPostgres, type Service } from "../helpers/services";
import { until } from "../helpers/http";
import { Lease } from "../../engines/cluster/lease";

const missing = missingServices();

/** A TCP port on 127.0.0.1 forwarding to PostgreSQL's Unix socket; `cut()` partitions it. */
async function proxy(socketPath: string) {
  let cut = false;
  const pairs: Array<[net.Socket, net.Socket]> = [];
  const server = net.createServer((client) => {
    if (cut) return void client.destroy();
    const up = net.connect(socketPath);
    pairs.push([client, up]);
    client.on("data", (d) => { if (!cut) up.write(d); });
    up.on("data", (d) => { if (!cut) client.write(d); });
    client.on("error", () => undefined);
    up.on("error", () => undefined);
    up.on("close", () => { if (!cut) client.destroy(); });
    client.on("close", () => up.destroy());
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", () => r()));
  return {
    port: (server.address() as net.AddressInfo).port,
    cut() {
      cut = true;
      // PostgreSQL's side goes (its session ends); the holder's side stays open, silent
      for (const [, up] of pairs) up.destroy();
    },
    close() {
      for (const [c, u] of pairs) (c.destroy(), u.destroy());
      server.close();
    },
  };
}

describe.skipIf(!!missing)("reconciler lease across a network partition", () => {
  let pg: Service | undefined;
  const leases: Lease[] = [];
  let px: Awaited<ReturnType<typeof proxy>> | undefined;
  afterAll(async () => {
    // the proxy first: a lease still waiting on its cut connection gets an answer (closed)
    px?.close();
    for (const l of leases) await l.close().catch(() => undefined);
    await pg?.stop();
  });

  it("the old holder stops its controllers once its session is gone", async () => {
    pg = await startPostgres();
    const dir = decodeURIComponent(/host=([^&]+)/.exec(pg.url)![1]);
    px = await proxy(`${dir}/.s.PGSQL.5432`);
    const events: string[] = [];
    const mk = (name: string, url: string) => {
      const l = new Lease({ url, retryMs: 200, onAcquire: () => void events.push(`${name} acquire`), onLose: () => void events.push(`${name} lose`), log: () => undefined });
      leases.push(l);
      return l;
    };
    const a = mk("a", `postgresql://svc@127.0.0.1:${px.port}/postgres`);
    await a.start();
    expect(a.held).toBe(true);
    const b = mk("b", pg.url);
    await b.start();
    expect(b.held).toBe(false);

    px.cut();
    // PostgreSQL ended a's session: b takes the lease over
    await until(() => b.held, 15_000);
    // a must not go on believing it holds it (two reconcilers)
    await until(() => !a.held, 30_000);
    expect(events).toContain("a lose");
  }, 90_000);
});

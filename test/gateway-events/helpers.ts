// Shared pieces of the gateway-events suites: a real SQLite file in a temp dir, a loopback
// webhook receiver, and a settable clock.
import { mkdtempSync, rmSync } from "node:fs";
import { createServer, type IncomingHttpHeaders, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import os from "node:os";
import path from "node:path";
import { openDb, type OpenedDb } from "../../prisma/client";

export function tempDir(): { dir: string; cleanup(): void } {
  const root = process.env.SVC_TEST_ROOT ?? os.tmpdir();
  const dir = mkdtempSync(path.join(root, "gw-events-"));
  return { dir, cleanup: () => rmSync(dir, { recursive: true, force: true }) };
}

export async function tempDb(): Promise<OpenedDb & { dir: string; cleanup(): Promise<void> }> {
  const t = tempDir();
  const db = await openDb(path.join(t.dir, "svc.db"));
  return {
    ...db,
    dir: t.dir,
    async cleanup() {
      await db.close().catch(() => undefined);
      t.cleanup();
    },
  };
}

export interface Received {
  headers: IncomingHttpHeaders;
  body: string;
}

/** A loopback HTTP receiver; `respond` decides each status (default 200). */
export async function receiver(respond: (n: number, r: Received) => number = () => 200) {
  const got: Received[] = [];
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c) => chunks.push(c));
    req.on("end", () => {
      const r = { headers: req.headers, body: Buffer.concat(chunks).toString("utf8") };
      got.push(r);
      res.statusCode = respond(got.length, r);
      res.end("ok");
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const port = (server.address() as AddressInfo).port;
  return {
    got,
    port,
    url: `http://127.0.0.1:${port}/hook`,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

export function clock(start = "2026-11-22T10:00:00.000Z") {
  let t = new Date(start).getTime();
  return {
    now: () => new Date(t),
    advance(ms: number) {
      t += ms;
    },
    set(iso: string) {
      t = new Date(iso).getTime();
    },
  };
}

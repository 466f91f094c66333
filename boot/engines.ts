// The engine registry: where svc's engines are constructed, each module imported here when svc
// starts it (boot/start.ts calls this once the listener is bound, so /health answers while they
// load). Inside an engine, what is heavy loads on first use: node-llama-cpp with the first model
// (engines/inference/runtime.ts), the MCP SDK with the first McpServer connection or /mcp session.
import type { Svc, Logger } from "../engines/svc";
import type { ResourceStore } from "../prisma/resource-store";
import type { StartupSteps } from "../api/startup-progress";
import type { Cluster } from "../engines/cluster";
import type { McpEngine } from "../engines/mcp/engine";

export interface LoadedEngines {
  cluster: Cluster;
  mcp: McpEngine;
}

/**
 * Start every engine into svc.engines. Each is optional: one that cannot start is left out
 * (logged), and the routes that need it answer 503 saying so, while configuration, status and
 * admin keep working. `cleanup` gets each engine's close, in start order.
 */
export async function loadEngines(svc: Svc, store: ResourceStore, steps: StartupSteps, cleanup: Array<() => Promise<unknown>>): Promise<LoadedEngines> {
  const log: Logger = svc.log;
  svc.engines.metrics = (await import("../engines/metrics")).createMetrics(svc);
  cleanup.push(async () => svc.engines.pool?.close());

  const optional = async <T>(unavailable: string, start: () => Promise<T> | T, close?: (e: T) => Promise<unknown>): Promise<T | undefined> => {
    try {
      const e = await start();
      if (close) cleanup.push(() => close(e));
      return e;
    } catch (e: any) {
      log.warn(unavailable, { err: String(e?.message ?? e) });
      return undefined;
    }
  };
  svc.engines.gateway = await optional(
    "gateway engine not started; inference routes are unavailable",
    () => steps.run("starting the gateway", async () => (await import("../engines/gateway")).createGateway(svc)),
    (gw) => gw.close(),
  );

  // scale-out (engines/cluster): shared limits and store changes on Redis, before any request
  const { startCluster } = await import("../engines/cluster");
  const cluster = await startCluster(svc, store);
  cleanup.push(() => cluster.close());

  // MCP: tool service connections and the tool catalog (agents, /mcp, `svc mcp`).
  const { createMcpEngine } = await import("../engines/mcp");
  const mcp = createMcpEngine(svc);
  svc.engines.mcp = mcp;
  svc.engines.tools = mcp;
  cleanup.push(() => mcp.close());
  // Agents and tasks (fails unfinished tasks left by a previous process as interrupted).
  svc.engines.agents = await optional(
    "agents engine not started; agent routes are unavailable",
    () => steps.run("starting agents and tasks", async () => (await import("../engines/agents")).createAgents(svc)),
    (a) => a.close(),
  );
  // Memory (re-arms the debounce of sessions a previous process left pending).
  svc.engines.memory = await optional("memory engine not started; memory routes are unavailable", async () => (await import("../engines/memory")).createMemory(svc), (m) => m.close());
  // Pairing and the secure channel (the server's identity key lives in <home>/pairing).
  svc.engines.pairing = await optional(
    "pairing engine not started; pairing and secure-channel routes are unavailable",
    async () => new (await import("../engines/pairing")).Pairing(store, svc.home),
    async (p) => p.close(),
  );
  // Media: forwarded to Providers that declare the capability; jobs in the store.
  svc.engines.media = await optional(
    "media engine not started; media routes are unavailable",
    async () => {
      const media = new (await import("../engines/media")).Media(svc);
      await media.jobs.recover();
      return media;
    },
    (m) => m.close(),
  );
  return { cluster, mcp };
}

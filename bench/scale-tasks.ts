// Detached tasks through one svc (bench/scale.ts): `workers` loops each dispatch a task of the
// bench agent (one model call to the stand-in upstream) and poll it until it has finished;
// tasks/s over the whole run and the dispatch-to-finished p50/p99. With PostgreSQL every
// dispatch takes the cluster-wide capacity lock and every write goes to the shared database.
import { percentile } from "./report";

export const BENCH_AGENT = `apiVersion: svc/v1
kind: Agent
metadata: {name: bench-agent}
spec:
  defaultModel: bench-model
  maxIterations: 2
---
apiVersion: svc/v1
kind: Server
metadata: {name: main}
spec:
  limits: {maxConcurrentDispatch: 256}
`;

export interface TaskRate {
  tasks: number;
  perSecond: number;
  p50: number;
  p99: number;
  failed: number;
}

async function call(url: string, method: string, p: string, key: string, body?: unknown): Promise<{ status: number; json: any }> {
  const r = await fetch(url + p, { method, headers: { authorization: `Bearer ${key}`, ...(body ? { "content-type": "application/json" } : {}) }, body: body ? JSON.stringify(body) : undefined });
  return { status: r.status, json: await r.json().catch(() => null) };
}

/** Wait until the agent can be dispatched on `url` (its manifests applied and reconciled). */
export async function agentReady(url: string, key: string): Promise<void> {
  for (let i = 0; i < 300; i++) {
    const r = await call(url, "GET", "/agents", key);
    if (r.json?.data?.some?.((a: any) => a.id === "bench-agent" && a.ready)) return;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`bench-agent is not ready on ${url}`);
}

export async function taskRate(url: string, key: string, tasks: number, workers: number): Promise<TaskRate> {
  const took: number[] = [];
  let next = 0;
  let failed = 0;
  const t0 = performance.now();
  await Promise.all(Array.from({ length: workers }, async () => {
    while (next < tasks) {
      next++;
      const s = performance.now();
      const d = await call(url, "POST", "/agents/bench-agent/dispatch", key, { prompt: "Say hello." });
      if (d.status !== 202) {
        failed++;
        continue;
      }
      for (;;) {
        const t = await call(url, "GET", `/tasks/${d.json.id}`, key);
        if (t.json?.finished_at) {
          if (t.json.status !== "completed") failed++;
          break;
        }
        await new Promise((r) => setTimeout(r, 5));
      }
      took.push(performance.now() - s);
    }
  }));
  const secs = (performance.now() - t0) / 1000;
  took.sort((a, b) => a - b);
  return { tasks, perSecond: tasks / secs, p50: percentile(took, 50), p99: percentile(took, 99), failed };
}

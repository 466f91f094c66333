// Agents benchmark: dispatch -> first step latency (sequential dispatches, measured from the
// task's stored creation time to its first step record), and 100 tasks dispatched at once and
// drained with no loss, against a real svc on a temp store and a loopback stand-in provider
// (one model call per task, streamed, answered at once).
import http from "node:http";
import type { AddressInfo } from "node:net";
import { mkdtempSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { startSvc } from "../boot/start";
import { jsonLogger } from "../boot/start";
import { table, ms, percentile, type Section } from "./report";

function standIn(): Promise<{ url: string; close(): void }> {
  const server = http.createServer((req, res) => {
    let raw = "";
    req.on("data", (c) => (raw += c));
    req.on("end", () => {
      const body = JSON.parse(raw || "{}");
      const usage = { prompt_tokens: 12, completion_tokens: 8, total_tokens: 20 };
      if (!body.stream) {
        const s = JSON.stringify({ id: "c", object: "chat.completion", created: 1, model: body.model, choices: [{ index: 0, message: { role: "assistant", content: "done" }, finish_reason: "stop" }], usage });
        res.writeHead(200, { "content-type": "application/json", "content-length": Buffer.byteLength(s) });
        return res.end(s);
      }
      res.writeHead(200, { "content-type": "text/event-stream" });
      const chunk = (choices: unknown[], extra = {}) => res.write(`data: ${JSON.stringify({ id: "c", object: "chat.completion.chunk", created: 1, model: body.model, choices, ...extra })}\n\n`);
      chunk([{ index: 0, delta: { role: "assistant", content: "done" }, finish_reason: null }]);
      chunk([{ index: 0, delta: {}, finish_reason: "stop" }]);
      chunk([], { usage });
      res.end("data: [DONE]\n\n");
    });
  });
  return new Promise((resolve) => server.listen(0, "127.0.0.1", () => resolve({ url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`, close: () => server.close() })));
}

export async function agentsBench(opts: { sequential?: number; burst?: number } = {}): Promise<Section> {
  const sequential = opts.sequential ?? 50;
  const burst = opts.burst ?? 100;
  const home = mkdtempSync(path.join(os.tmpdir(), "svc-bench-agents-"));
  const up = await standIn();
  const s = await startSvc({ home, host: "127.0.0.1", port: 0, quickstart: false, resyncMs: 0, log: jsonLogger({ write: () => {} }) });
  try {
    await s.svc.store.write([
      { op: "upsert", kind: "Server", name: "main", owner: "config:bench", spec: { limits: { maxConcurrentDispatch: burst + 10 } } },
      { op: "upsert", kind: "Provider", name: "stand-in", owner: "config:bench", spec: { type: "openai", baseUrl: up.url, timeoutSeconds: 30, models: [{ name: "bench-model" }] } },
      { op: "upsert", kind: "Agent", name: "bench", owner: "config:bench", spec: { defaultModel: "bench-model", maxIterations: 2 } },
    ]);
    const t0 = Date.now();
    while (s.svc.store.get("Agent", "bench")?.status.conditions?.[0]?.status !== "True" || s.svc.server.limits?.maxConcurrentDispatch !== burst + 10) {
      if (Date.now() - t0 > 20_000) throw new Error("bench agent never became Ready");
      await new Promise((r) => setTimeout(r, 10));
    }
    const prisma = s.svc.db.prisma;
    const dispatch = async () => {
      const r = await fetch(`${s.url}/agents/bench/dispatch`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ prompt: "go" }) });
      if (r.status !== 202) throw new Error(`dispatch answered ${r.status}: ${await r.text()}`);
      return ((await r.json()) as { id: string }).id;
    };
    const settled = async (ids: string[], timeoutMs: number) => {
      const t = Date.now();
      for (;;) {
        const n = await prisma.agentTask.count({ where: { id: { in: ids }, status: { in: ["completed", "failed", "cancelled"] } } });
        if (n === ids.length) return;
        if (Date.now() - t > timeoutMs) throw new Error(`${ids.length - n} of ${ids.length} tasks unfinished after ${timeoutMs} ms`);
        await new Promise((r) => setTimeout(r, 5));
      }
    };

    // 1. dispatch -> first step, one task at a time
    const http: number[] = [];
    const firstStep: number[] = [];
    for (let i = 0; i < sequential; i++) {
      const a = performance.now();
      const id = await dispatch();
      http.push(performance.now() - a);
      await settled([id], 10_000);
      const task = await prisma.agentTask.findUnique({ where: { id } });
      const step = await prisma.agentTaskStep.findFirst({ where: { taskId: id, type: "step" }, orderBy: { seq: "asc" } });
      firstStep.push(step!.at.getTime() - task!.createdAt.getTime());
    }

    // 2. a burst dispatched at once, drained
    const b0 = performance.now();
    const ids = await Promise.all(Array.from({ length: burst }, dispatch));
    const accepted = performance.now() - b0;
    await settled(ids, 120_000);
    const drained = performance.now() - b0;
    const byStatus = await prisma.agentTask.groupBy({ by: ["status"], where: { id: { in: ids } }, _count: true });
    const completed = byStatus.find((g) => g.status === "completed")?._count ?? 0;
    const lost = burst - byStatus.reduce((n, g) => n + g._count, 0);

    const data = {
      sequential,
      dispatchHttpMs: { p50: percentile(http, 50), p99: percentile(http, 99) },
      dispatchToFirstStepMs: { p50: percentile(firstStep, 50), p99: percentile(firstStep, 99), max: Math.max(...firstStep) },
      burst: { tasks: burst, acceptedMs: accepted, drainedMs: drained, tasksPerSecond: burst / (drained / 1000), completed, lost, byStatus: Object.fromEntries(byStatus.map((g) => [g.status, g._count])) },
    };
    const body = [
      table(
        ["measure", "p50", "p99"],
        [
          [`dispatch request (HTTP 202), ${sequential} sequential`, ms(data.dispatchHttpMs.p50), ms(data.dispatchHttpMs.p99)],
          ["dispatch -> first step (stored timestamps, ms resolution)", ms(data.dispatchToFirstStepMs.p50), ms(data.dispatchToFirstStepMs.p99)],
        ],
      ),
      "",
      table(
        ["burst", "all accepted", "all finished", "tasks/s", "completed", "lost"],
        [[burst, ms(accepted), ms(drained), data.burst.tasksPerSecond.toFixed(0), completed, lost]],
      ),
      "",
      "One streamed model call per task against an in-process loopback stand-in; each task writes its row, a step log and status changes to SQLite.",
    ].join("\n");
    return { title: "Agents and tasks", body, data };
  } finally {
    await s.stop();
    up.close();
    rmSync(home, { recursive: true, force: true });
  }
}

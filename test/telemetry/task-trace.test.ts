// One trace per agent task across replicas (shared mode: PostgreSQL and Redis started by the
// test helpers): a task dispatched on replica A calls an MCP tool, asks a clarification that is
// answered through replica B, then finishes on its runner and writes its memory. Every span of it
// (invoke_agent for each stretch of the run, the model calls, execute_tool, memory recall and
// write with memory's own embedding calls under them, and B's answer) is in the dispatching
// request's trace, exported over OTLP to a loopback receiver.
import { describe, it, expect, beforeAll, afterAll } from "vitest";
import { missingServices } from "../helpers/services";
import { eventually } from "../helpers/http";
import { scriptedProvider, type ScriptedProvider } from "../agents/scripted";
import { startShared, startReplica, everywhere, type Replica, type Shared } from "../scale/cluster";
import { toolStandIn, type ToolStandIn } from "../scale/tool-stand-in";
import { otlpReceiver, type Receiver } from "./otlp-receiver";
import { standIn, type StandIn } from "../gateway/fixtures";
import { diag, DiagLogLevel } from "@opentelemetry/api";

const missing = missingServices();
if (missing) console.warn(`test/telemetry/task-trace skipped: ${missing}`);

describe.skipIf(!!missing)("an agent task is one trace across replicas", () => {
  let shared: Shared;
  const rs: Replica[] = [];
  let up: ScriptedProvider;
  let tool: ToolStandIn;
  let rx: Receiver;
  let embedder: StandIn;
  const saved = { ...process.env };
  // what OpenTelemetry reports as misuse (a span ended twice, an attribute set on an ended span)
  const misuse: string[] = [];

  beforeAll(async () => {
    const note = (m: string) => void misuse.push(m);
    diag.setLogger({ error: note, warn: note, info: () => {}, debug: () => {}, verbose: () => {} }, DiagLogLevel.WARN);
    rx = await otlpReceiver();
    Object.assign(process.env, { OTEL_EXPORTER_OTLP_ENDPOINT: rx.url, OTEL_EXPORTER_OTLP_PROTOCOL: "http/protobuf", OTEL_BSP_SCHEDULE_DELAY: "20" });
    up = await scriptedProvider();
    up.script("tracer", (_b, turn) =>
      turn === 0 ? { calls: [{ name: "standin_done", args: {} }] } : turn === 1 ? { calls: [{ name: "clarify", args: { question: "Which city?" } }] } : { text: "answer: Paris" },
    );
    tool = await toolStandIn();
    embedder = await standIn();
    shared = await startShared();
    rs.push(await startReplica()); // first up: holds the lease, so it connects the tool service
    rs.push(await startReplica());
    const provider = { type: "openai", baseUrl: up.baseUrl, timeoutSeconds: 10, models: [{ name: "tracer", inputPerMillion: 1, outputPerMillion: 2 }] };
    await rs[0].svc.svc.store.write([
      { op: "upsert", kind: "Provider", name: "scripted", owner: "config:test", spec: provider },
      { op: "upsert", kind: "Provider", name: "embedder", owner: "config:test", spec: { type: "openai", baseUrl: embedder.baseUrl, timeoutSeconds: 10, models: [{ name: "emb" }] } },
      { op: "upsert", kind: "MemoryConfig", name: "memory", owner: "config:test", spec: { embeddingModel: "emb" } },
      { op: "upsert", kind: "McpServer", name: "standin", owner: "config:test", spec: { transport: "http", url: tool.url } },
      { op: "upsert", kind: "Agent", name: "tracer", owner: "config:test", spec: { instructions: "You are tracer.", defaultModel: "tracer", maxIterations: 6, memory: true, capabilities: ["tools"], toolPolicy: { allow: ["standin_done"] } } },
    ]);
    await everywhere(rs, "Agent", "tracer");
    await everywhere(rs, "MemoryConfig", "memory", (spec) => spec.embeddingModel === "emb");
    await eventually(async () => (await rs[0].api("GET", "/agents")).json?.data?.find?.((a: any) => a.id === "tracer")?.ready === true, 30_000);
  }, 120_000);

  afterAll(async () => {
    for (const r of rs) await r.svc.stop().catch(() => undefined);
    await shared?.stop();
    await tool?.close();
    await up?.close();
    await embedder?.close();
    await rx?.close();
    diag.disable();
    process.env = saved;
  }, 120_000);

  it("dispatched on A, clarified through B, finished on A: invoke_agent, chat, execute_tool, memory and the answer share one trace", async () => {
    const n = up.requests.length;
    const d = await rs[0].api("POST", "/agents/tracer/dispatch", { prompt: "weather?" });
    expect(d.status).toBe(202);
    await eventually(async () => (await rs[1].api("GET", `/tasks/${d.json.id}`)).json?.status === "input_required", 20_000);
    const a = await rs[1].api("POST", `/tasks/${d.json.id}/clarify`, { response: "Paris" });
    expect(a.status).toBe(200);
    await eventually(async () => (await rs[1].api("GET", `/tasks/${d.json.id}`)).json?.status === "completed", 20_000);
    expect(tool.calls.get("done")).toBe(1);
    expect(up.requests.length - n).toBe(3);

    const invoke = () => rx.spans.filter((s) => s.name === "invoke_agent tracer" && s.attrs["svc.task.id"] === d.json.id);
    await eventually(async () => invoke().length === 2 && rx.spans.some((s) => s.name === "answer_task" && s.attrs["svc.task.id"] === d.json.id), 10_000);
    const traceId = invoke()[0].traceId;
    await eventually(async () => rx.spans.filter((s) => s.traceId === traceId && s.name === "memory write").length === 1, 10_000);
    const spans = rx.spans.filter((s) => s.traceId === traceId);
    const names = spans.map((s) => s.name);
    expect(invoke().every((s) => s.traceId === traceId)).toBe(true);
    expect(names.filter((x) => x === "chat tracer")).toHaveLength(3);
    expect(names).toContain("execute_tool standin_done");
    expect(names).toContain("memory recall");
    expect(names).toContain("memory write");
    expect(names).toContain("answer_task"); // written by replica B, which never ran the task
    // memory's own model calls: the query vector under the recall, the turn's vector under the write
    await eventually(async () => rx.spans.filter((s) => s.traceId === traceId && s.name === "embeddings emb").length === 2, 10_000);
    const all = rx.spans.filter((s) => s.traceId === traceId);
    const byId = new Map(all.map((s) => [s.spanId, s]));
    const embeds = all.filter((s) => s.name === "embeddings emb");
    expect(embeds.map((s) => byId.get(s.parentSpanId)?.name).sort()).toEqual(["memory recall", "memory write"]);
    expect(embeds.every((s) => s.attrs["gen_ai.operation.name"] === "embeddings")).toBe(true);
    // the model calls and the tool call are children of an invoke_agent span
    const invokeIds = new Set(invoke().map((s) => s.spanId));
    const toolSpan = spans.find((s) => s.name === "execute_tool standin_done")!;
    expect(invokeIds.has(toolSpan.parentSpanId)).toBe(true);
    expect(toolSpan.attrs).toMatchObject({ "gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "standin_done" });
    expect(spans.filter((s) => s.name === "chat tracer").every((s) => invokeIds.has(s.parentSpanId))).toBe(true);
    expect(invoke()[0].attrs).toMatchObject({ "gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "tracer" });
    // the dispatching request's server span is the root of it all
    const root = spans.find((s) => s.kind === 2 && s.name === "POST /agents/:id/dispatch");
    expect(root).toBeDefined();
    expect(invoke().every((s) => s.parentSpanId === root!.spanId)).toBe(true);
    // every span ended once, and nothing set on one after it ended
    expect(misuse.filter((m) => /end\(\)|ended/i.test(m))).toEqual([]);
  });
});

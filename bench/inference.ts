// Inference benchmark on a generated mid-size model: decode tokens/s through svc's streaming
// endpoints vs raw node-llama-cpp in this process, time-to-first-token overhead, and aggregate
// tokens/s for 1, 2 and 4 concurrent streams. svc runs as its own process, 1 thread, like raw.
import type { ChildProcess } from "node:child_process";
import { mkdtempSync, mkdirSync, writeFileSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { createParser } from "eventsource-parser";
import { writeTinyGguf, rawDecodeBenchmark } from "../engines/inference";
import { table, ms, type Section } from "./report";
import { sleep, startSvcProcess } from "./processes";
const PROMPT = "The quick brown fox jumps over the lazy dog and then";

interface StreamRun { firstMs: number; tokens: number; decodeTps: number; totalMs: number }

/** One streamed request; decode rate counts tokens after the first over the time after it. */
async function streamOnce(url: string, body: object): Promise<StreamRun> {
  const t0 = performance.now();
  const res = await fetch(url, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body) });
  if (!res.ok || !res.body) throw new Error(`${url}: HTTP ${res.status} ${await res.text()}`);
  let first = 0;
  let usage = 0;
  let chunks = 0;
  const parser = createParser({
    onEvent(ev) {
      if (ev.data === "[DONE]") return;
      const j = JSON.parse(ev.data);
      const piece = j.choices?.[0]?.delta?.content ?? j.choices?.[0]?.text;
      if (piece) {
        if (!first) first = performance.now();
        chunks++;
      }
      if (j.usage?.completion_tokens) usage = j.usage.completion_tokens;
    },
  });
  const dec = new TextDecoder();
  for await (const part of res.body as any) parser.feed(dec.decode(part, { stream: true }));
  const end = performance.now();
  const tokens = usage || chunks;
  return { firstMs: first - t0, tokens, decodeTps: tokens > 1 ? ((tokens - 1) * 1000) / (end - first) : 0, totalMs: end - t0 };
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

export async function inferenceBench(): Promise<Section> {
  const tmp = mkdtempSync(path.join(os.tmpdir(), "svc-bench-inf-"));
  const tokens = Number(process.env.BENCH_TOKENS ?? 200);
  const reps = Number(process.env.BENCH_REPS ?? 5);
  let svc: ChildProcess | undefined;
  try {
    const file = path.join(tmp, "svc-medium.gguf");
    const { bytes } = await writeTinyGguf(file, "medium");


    const cfg = path.join(tmp, "config");
    mkdirSync(cfg);
    writeFileSync(path.join(cfg, "model.yaml"), `apiVersion: svc/v1
kind: Model
metadata: {name: medium}
spec: {file: ${JSON.stringify(file)}, threads: 1, parallel: 4, contextSize: 2048, idleUnloadSeconds: 0}
`);
    const home = path.join(tmp, "home");
    const started = await startSvcProcess({ home, config: cfg });
    svc = started.proc;
    const base = started.url;
    const completions = { model: "medium", prompt: PROMPT, max_tokens: tokens, temperature: 0, stream: true, stream_options: { include_usage: true } };
    const chat = { model: "medium", messages: [{ role: "user", content: PROMPT }], max_tokens: tokens, temperature: 0, stream: true, stream_options: { include_usage: true } };
    await streamOnce(`${base}/v1/completions`, { ...completions, max_tokens: 4 }); // load the model

    // Raw node-llama-cpp (this process, same prompt, greedy, 1 thread) and svc alternate, so
    // drift in the machine's speed during the run affects both alike.
    const raw: Awaited<ReturnType<typeof rawDecodeBenchmark>>[] = [];
    const viaCompletions: StreamRun[] = [];
    const viaChat: StreamRun[] = [];
    for (let i = 0; i < reps; i++) {
      raw.push(await rawDecodeBenchmark(file, { threads: 1, tokens, prompt: PROMPT }));
      viaCompletions.push(await streamOnce(`${base}/v1/completions`, completions));
      viaChat.push(await streamOnce(`${base}/v1/chat/completions`, chat));
    }
    const concurrency: Record<number, { aggregateTps: number; perStreamTps: number }> = {};
    for (const c of [1, 2, 4]) {
      const t0 = performance.now();
      const runs = await Promise.all(Array.from({ length: c }, () => streamOnce(`${base}/v1/chat/completions`, chat)));
      const wall = (performance.now() - t0) / 1000;
      const total = runs.reduce((s, r) => s + r.tokens, 0);
      concurrency[c] = { aggregateTps: total / wall, perStreamTps: median(runs.map((r) => r.decodeTps)) };
    }

    const rawTps = median(raw.map((r) => r.tokensPerSecond));
    const rawFirst = median(raw.map((r) => r.firstTokenMs));
    const cTps = median(viaCompletions.map((r) => r.decodeTps));
    const cFirst = median(viaCompletions.map((r) => r.firstMs));
    const chTps = median(viaChat.map((r) => r.decodeTps));
    const chFirst = median(viaChat.map((r) => r.firstMs));
    const pct = (a: number) => `${((a / rawTps) * 100).toFixed(1)}%`;
    const body = [
      `Model: generated \`medium\` GGUF (${(bytes / 2 ** 20).toFixed(0)} MiB), 1 thread, greedy, ${tokens} tokens, median of ${reps} runs. ` +
        "Raw = node-llama-cpp `sequence.evaluate` in the benchmark process (no svc code); svc = HTTP streaming from a separate svc process. " +
        "svc first-token time includes HTTP, JSON and SSE; raw's is prompt evaluation only.",
      "",
      table(["path", "decode tokens/s", "vs raw", "time to first token", "first-token overhead"], [
        ["raw node-llama-cpp", rawTps.toFixed(1), "100%", ms(rawFirst), "-"],
        ["svc /v1/completions (same prompt tokens)", cTps.toFixed(1), pct(cTps), ms(cFirst), ms(cFirst - rawFirst)],
        ["svc /v1/chat/completions (ChatML prompt)", chTps.toFixed(1), pct(chTps), ms(chFirst), ms(chFirst - rawFirst)],
      ]),
      "",
      "Concurrent streams through /v1/chat/completions (one context, 4 sequences):",
      "",
      table(["streams", "aggregate tokens/s", "per-stream decode tokens/s"], [1, 2, 4].map((c) => [c, concurrency[c].aggregateTps.toFixed(1), concurrency[c].perStreamTps.toFixed(1)])),
      "",
      "Aims: svc ≥ 95% of raw decode speed; first-token overhead < 5 ms (read it from the /v1/completions row, where the prompt tokens are identical).",
    ].join("\n");
    return { title: "Inference: svc streaming vs raw node-llama-cpp", body, data: { raw, viaCompletions, viaChat, concurrency, bytes } };
  } finally {
    svc?.kill("SIGTERM");
    await sleep(500);
    rmSync(tmp, { recursive: true, force: true });
  }
}

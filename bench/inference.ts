// Inference benchmark on a generated mid-size model: decode tokens/s through svc's streaming
// endpoints vs raw node-llama-cpp in this process, time-to-first-token overhead, and aggregate
// tokens/s for 1, 2 and 4 concurrent streams; the batching limit is raw node-llama-cpp decoding
// 4 sequences in one context, in paired rounds with svc's 4 streams. svc runs as its own process, 1 thread, like raw.
import type { ChildProcess } from "node:child_process";
import { mkdtempSync, mkdirSync, writeFileSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { createParser } from "eventsource-parser";
import { getLlama } from "node-llama-cpp";
import { writeTinyGguf, rawDecodeBenchmark, rawParallelDecodeBenchmark, type RawDecodeResult, type RawParallelResult } from "../engines/inference";
import { table, ms, type Section } from "./report";
import { sleep, startSvcProcess } from "./processes";
const PROMPT = "The quick brown fox jumps over the lazy dog and then";

interface StreamRun { firstMs: number; tokens: number; promptTokens: number; decodeTps: number; totalMs: number }

/** One streamed request; decode rate counts tokens after the first over the time after it. */
async function streamOnce(url: string, body: object): Promise<StreamRun> {
  const t0 = performance.now();
  const res = await fetch(url, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body) });
  if (!res.ok || !res.body) throw new Error(`${url}: HTTP ${res.status} ${await res.text()}`);
  let first = 0;
  let usage = 0;
  let promptTokens = 0;
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
      if (j.usage?.prompt_tokens) promptTokens = j.usage.prompt_tokens;
    },
  });
  const dec = new TextDecoder();
  for await (const part of res.body as any) parser.feed(dec.decode(part, { stream: true }));
  const end = performance.now();
  const tokens = usage || chunks;
  return { firstMs: first - t0, tokens, promptTokens, decodeTps: tokens > 1 ? ((tokens - 1) * 1000) / (end - first) : 0, totalMs: end - t0 };
}

interface Round { raw: RawDecodeResult; viaCompletions: StreamRun; viaChat: StreamRun; sameAsChat: StreamRun; raw4: RawParallelResult; svc4: number }

/** The prompt tokens a (non-streamed) request reports. */
async function promptTokensOf(url: string, body: object): Promise<number> {
  const res = await fetch(url, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body) });
  const j: any = await res.json();
  if (!res.ok) throw new Error(`${url}: HTTP ${res.status} ${JSON.stringify(j)}`);
  return j.usage.prompt_tokens;
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

    // Every request of a round gets a prompt no sequence holds yet (a nonce in front, kept only
    // when it leaves the token count unchanged), so svc's prefix cache cannot make a path look
    // faster than raw, which evaluates its prompt in a fresh context: first-token times compare
    // full prompt evaluations. /v1/completions is also sent a prompt with as many tokens as the
    // chat request renders to, so chat's first-token overhead is read against the same prompt
    // length (the template's work alone).
    const llama = await getLlama({ gpu: false });
    const model = await llama.loadModel({ modelPath: file });
    const count = (text: string) => model.tokenize(text, false, "trimLeadingSpace").length;
    const nonces: string[] = [];
    for (let n = 1000; nonces.length < reps * 10 && n < 99_999; n++) if (count(`${n} ${PROMPT}`) === count(`1000 ${PROMPT}`)) nonces.push(`${n} `);
    let nonce = 0;
    const fresh = () => nonces[nonce++ % nonces.length];
    const chatOf = (text: string) => ({ ...chat, messages: [{ role: "user", content: text }] });
    const chatPromptTokens = await promptTokensOf(`${base}/v1/chat/completions`, { ...chatOf(`1000 ${PROMPT}`), stream: false, max_tokens: 1 });
    let filler = "";
    for (let i = 0; count(`1000 ${PROMPT}${filler}`) + 1 < chatPromptTokens && i < 64; i++) filler += " fox";

    // Paired rounds: raw node-llama-cpp (this process, greedy, 1 thread) and svc alternate, so
    // drift in the machine's speed during the run affects both alike.
    const rounds: Round[] = [];
    for (let i = 0; i < reps; i++) {
      const raw = await rawDecodeBenchmark(file, { threads: 1, tokens, prompt: fresh() + PROMPT, llama });
      const viaCompletions = await streamOnce(`${base}/v1/completions`, { ...completions, prompt: fresh() + PROMPT });
      const viaChat = await streamOnce(`${base}/v1/chat/completions`, chatOf(fresh() + PROMPT));
      const sameAsChat = await streamOnce(`${base}/v1/completions`, { ...completions, prompt: fresh() + PROMPT + filler });
      const raw4 = await rawParallelDecodeBenchmark(model, { threads: 1, tokens, prompt: fresh() + PROMPT, sequences: 4 });
      const t0 = performance.now();
      const runs = await Promise.all(Array.from({ length: 4 }, () => streamOnce(`${base}/v1/completions`, { ...completions, prompt: fresh() + PROMPT })));
      const svc4 = (runs.reduce((a, r) => a + r.tokens, 0) * 1000) / (performance.now() - t0);
      rounds.push({ raw, viaCompletions, viaChat, sameAsChat, raw4, svc4 });
    }
    await model.dispose();
    await llama.dispose();
    const concurrency: Record<number, { aggregateTps: number; perStreamTps: number }> = {};
    for (const c of [1, 2, 4]) {
      const t0 = performance.now();
      const runs = await Promise.all(Array.from({ length: c }, () => streamOnce(`${base}/v1/chat/completions`, chat)));
      const wall = (performance.now() - t0) / 1000;
      const total = runs.reduce((s, r) => s + r.tokens, 0);
      concurrency[c] = { aggregateTps: total / wall, perStreamTps: median(runs.map((r) => r.decodeTps)) };
    }

    const m = (f: (r: Round) => number) => median(rounds.map(f));
    const rawTps = m((r) => r.raw.tokensPerSecond);
    const rawFirst = m((r) => r.raw.firstTokenMs);
    const cTps = m((r) => r.viaCompletions.decodeTps);
    const cFirst = m((r) => r.viaCompletions.firstMs);
    const chTps = m((r) => r.viaChat.decodeTps);
    const chFirst = m((r) => r.viaChat.firstMs);
    const sameFirst = m((r) => r.sameAsChat.firstMs);
    const pct = (a: number) => `${((a / rawTps) * 100).toFixed(1)}%`;
    const pr = (xs: number[]) => `${(median(xs) * 100).toFixed(1)}% (rounds ${xs.map((x) => (x * 100).toFixed(0)).join(", ")})`;
    const single = rounds.map((r) => r.viaCompletions.decodeTps / r.raw.tokensPerSecond);
    const singleChat = rounds.map((r) => r.viaChat.decodeTps / r.raw.tokensPerSecond);
    const four = rounds.map((r) => r.svc4 / r.raw4.aggregateTps);
    const chatOver = rounds.map((r) => r.viaChat.firstMs - r.sameAsChat.firstMs);
    const body = [
      `Model: generated \`medium\` GGUF (${(bytes / 2 ** 20).toFixed(0)} MiB), 1 thread, greedy, ${tokens} tokens, ${reps} paired rounds (medians). ` +
        "Raw = node-llama-cpp `sequence.evaluate` in the benchmark process (no svc code); svc = HTTP streaming from a separate svc process. " +
        "svc first-token time includes HTTP, JSON and SSE; raw's is prompt evaluation only.",
      "",
      table(["path", "decode tokens/s", "vs raw", "time to first token", "first-token overhead"], [
        ["raw node-llama-cpp", rawTps.toFixed(1), "100%", ms(rawFirst), "-"],
        [`svc /v1/completions (${m((r) => r.viaCompletions.promptTokens)} prompt tokens; raw: ${m((r) => r.raw.promptTokens)})`, cTps.toFixed(1), pct(cTps), ms(cFirst), ms(cFirst - rawFirst)],
        ["svc /v1/chat/completions (ChatML prompt)", chTps.toFixed(1), pct(chTps), ms(chFirst), ms(chFirst - rawFirst)],
        [`svc /v1/completions (${m((r) => r.sameAsChat.promptTokens)} prompt tokens; chat: ${m((r) => r.viaChat.promptTokens)})`, "-", "-", ms(sameFirst), "-"],
      ]),
      "",
      table(["paired measure (svc / raw per round)", "median (rounds)", "aim"], [
        ["single-stream decode, /v1/completions", pr(single), "≥ 97%"],
        ["single-stream decode, /v1/chat/completions", pr(singleChat), "≥ 97%"],
        ["4 streams (/v1/completions) vs raw 4 sequences in one context, aggregate", pr(four), "≥ 90%"],
        ["chat first token minus /v1/completions first token, same prompt tokens", `${ms(median(chatOver))} (rounds ${chatOver.map((x) => x.toFixed(1)).join(", ")})`, "< 5 ms"],
      ]),
      "",
      `Raw 4 sequences in one context: ${m((r) => r.raw4.aggregateTps).toFixed(1)} tokens/s aggregate (${(m((r) => r.raw4.aggregateTps) / rawTps).toFixed(2)}x one sequence); svc 4 streams: ${m((r) => r.svc4).toFixed(1)}.`,
      "",
      "Concurrent streams through /v1/chat/completions (one context, 4 sequences):",
      "",
      table(["streams", "aggregate tokens/s", "per-stream decode tokens/s"], [1, 2, 4].map((c) => [c, concurrency[c].aggregateTps.toFixed(1), concurrency[c].perStreamTps.toFixed(1)])),
    ].join("\n");
    return { title: "Inference: svc streaming vs raw node-llama-cpp", body, data: { rounds, concurrency, bytes, chatPromptTokens } };
  } finally {
    svc?.kill("SIGTERM");
    await sleep(500);
    rmSync(tmp, { recursive: true, force: true });
  }
}

// Inference benchmark on a generated mid-size model: decode tokens/s through svc's streaming
// endpoints vs raw node-llama-cpp in this process, chat's first-token overhead over
// /v1/completions on the same prompt tokens, and aggregate tokens/s for 1, 2 and 4 concurrent
// streams; the batching limit is raw node-llama-cpp decoding 4 sequences in one context.
// Method (docs/operations.md): svc is its own `svc serve` process pinned to core 1; raw runs in
// this process, pinned to core 1 while it decodes and to core 0 (the HTTP client's) otherwise,
// so both decode on the same core with their JS beside it. Same threads, context size,
// sequences per context, batch size and sampling; CPU time per token beside the wall rates.
import type { ChildProcess } from "node:child_process";
import { mkdtempSync, mkdirSync, writeFileSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { createParser } from "eventsource-parser";
import { getLlama, resolveChatWrapper, type LlamaModel } from "node-llama-cpp";
import { writeTinyGguf, rawDecodeBenchmark, rawCompletionBenchmark, rawParallelDecodeBenchmark, resolveSampling, type RawDecodeResult, type RawParallelResult } from "../engines/inference";
import { table, ms, type Section } from "./report";
import { sleep, startSvcProcess, pinSelf, unpinSelf } from "./processes";
import { cpuNanos } from "./cpu-time";
const PROMPT = "The quick brown fox jumps over the lazy dog and then";
const SETTINGS = { threads: 1, parallel: 4, contextSize: 2048 };

interface StreamRun { firstMs: number; tokens: number; promptTokens: number; decodeTps: number; totalMs: number; cpuMicros: number; decodeCpuMicros: number }

/** One streamed request; decode rate counts tokens after the first over the time after it;
 * cpuMicros is svc's CPU (every thread) over the request. */
async function streamOnce(url: string, body: object, pid?: number): Promise<StreamRun> {
  const cpu0 = cpuNanos(pid);
  const t0 = performance.now();
  const res = await fetch(url, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body) });
  if (!res.ok || !res.body) throw new Error(`${url}: HTTP ${res.status} ${await res.text()}`);
  let first = 0;
  let usage = 0;
  let promptTokens = 0;
  let chunks = 0;
  let cpuFirst: number | undefined;
  const parser = createParser({
    onEvent(ev) {
      if (ev.data === "[DONE]") return;
      const j = JSON.parse(ev.data);
      const piece = j.choices?.[0]?.delta?.content ?? j.choices?.[0]?.text;
      if (piece) {
        if (!first) {
          first = performance.now();
          cpuFirst = cpuNanos(pid);
        }
        chunks++;
      }
      if (j.usage?.completion_tokens) usage = j.usage.completion_tokens;
      if (j.usage?.prompt_tokens) promptTokens = j.usage.prompt_tokens;
    },
  });
  const dec = new TextDecoder();
  for await (const part of res.body as any) parser.feed(dec.decode(part, { stream: true }));
  const end = performance.now();
  const cpu1 = cpuNanos(pid);
  const tokens = usage || chunks;
  const us = (a?: number, b?: number) => (a !== undefined && b !== undefined ? (b - a) / 1000 : NaN);
  return {
    firstMs: first - t0, tokens, promptTokens, decodeTps: tokens > 1 ? ((tokens - 1) * 1000) / (end - first) : 0, totalMs: end - t0,
    cpuMicros: us(cpu0, cpu1), decodeCpuMicros: us(cpuFirst, cpu1),
  };
}

interface Round { raw: RawDecodeResult; rawApi: RawDecodeResult; viaCompletions: StreamRun; viaChat: StreamRun; raw4: RawParallelResult; svc4: number }
interface FirstPair { chat: StreamRun; completions: StreamRun }

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

/** Tokens at the start of every chat prompt (the template's opening, before the user's text):
 * svc's prefix cache reuses them from the last chat on a sequence. */
function chatFixedPrefix(model: LlamaModel, text: (n: string) => string): number {
  const wrapper = resolveChatWrapper(model);
  const render = (t: string) => wrapper.generateContextState({ chatHistory: [{ type: "user", text: t }, { type: "model", response: [] }] }).contextText.tokenize(model.tokenizer);
  const a = render(text("1000 "));
  const b = render(text("2000 "));
  let i = 0;
  while (i < a.length && a[i] === b[i]) i++;
  return i;
}

/** `a` then `b` when `aFirst`, else `b` then `a`; the results in the order of the arguments. */
async function inOrder<A, B>(aFirst: boolean, a: () => Promise<A>, b: () => Promise<B>): Promise<[A, B]> {
  if (aFirst) {
    const x = await a();
    return [x, await b()];
  }
  const y = await b();
  return [await a(), y];
}

/** The generated `medium` GGUF in `dir` and a config folder declaring it with SETTINGS: the model
 * svc serves in this bench, and in the dev tools that profile or compare its streams. */
export async function mediumModel(dir: string): Promise<{ file: string; cfg: string; bytes: number }> {
  const file = path.join(dir, "svc-medium.gguf");
  const { bytes } = await writeTinyGguf(file, "medium");
  const cfg = path.join(dir, "config");
  mkdirSync(cfg);
  writeFileSync(path.join(cfg, "model.yaml"), `apiVersion: svc/v1
kind: Model
metadata: {name: medium}
spec: {file: ${JSON.stringify(file)}, threads: ${SETTINGS.threads}, parallel: ${SETTINGS.parallel}, contextSize: ${SETTINGS.contextSize}, idleUnloadSeconds: 0}
`);
  return { file, cfg, bytes };
}

export async function inferenceBench(): Promise<Section> {
  const tmp = mkdtempSync(path.join(os.tmpdir(), "svc-bench-inf-"));
  const tokens = Number(process.env.BENCH_TOKENS ?? 150);
  const reps = Number(process.env.BENCH_REPS ?? 8);
  const pairs = Number(process.env.BENCH_FIRST_PAIRS ?? 24);
  let svc: ChildProcess | undefined;
  const pinned = pinSelf(0);
  const onCore = (core: number) => { if (pinned) pinSelf(core); };
  try {
    const { file, cfg, bytes } = await mediumModel(tmp);
    const started = await startSvcProcess({ home: path.join(tmp, "home"), config: cfg, core: pinned ? 1 : undefined });
    svc = started.proc;
    const pid = svc.pid;
    const base = started.url;
    // svc resolves a request's sampling (temperature 0; top-k/top-p/min-p, repeat penalty from
    // its defaults); raw evaluates with the same values
    const s = resolveSampling({ sampling: { temperature: 0 }, maxTokens: tokens }, {});
    const sampling = { temperature: s.temperature, topK: s.topK, topP: s.topP, minP: s.minP, ...(s.seed !== undefined ? { seed: s.seed } : {}) };
    const rawOpts = { threads: SETTINGS.threads, contextSize: SETTINGS.contextSize, contextSequences: SETTINGS.parallel, sampling, tokens };
    const completions = { model: "medium", prompt: PROMPT, max_tokens: tokens, temperature: 0, stream: true, stream_options: { include_usage: true } };
    const chat = { model: "medium", messages: [{ role: "user", content: PROMPT }], max_tokens: tokens, temperature: 0, stream: true, stream_options: { include_usage: true } };
    const chatOf = (text: string, maxTokens = tokens) => ({ ...chat, max_tokens: maxTokens, messages: [{ role: "user", content: text }] });
    await streamOnce(`${base}/v1/completions`, { ...completions, max_tokens: 4 }); // load the model

    // Every request gets a prompt no sequence holds yet (a nonce in front of the text, kept only
    // when it leaves the token count unchanged), so svc's prefix cache cannot make a path look
    // faster than raw, which evaluates its prompt in a fresh context.
    const llama = await getLlama({ gpu: false });
    const model = await llama.loadModel({ modelPath: file });
    const count = (text: string) => model.tokenize(text, false, "trimLeadingSpace").length;
    const nonces: string[] = [];
    for (let n = 1000; nonces.length < (reps * 10 + pairs * 2) && n < 99_999; n++) if (count(`${n} ${PROMPT}`) === count(`1000 ${PROMPT}`)) nonces.push(`${n} `);
    let nonce = 0;
    const fresh = () => nonces[nonce++ % nonces.length];

    // Chat's first token against /v1/completions with as many prompt tokens, of which as many
    // are a fixed opening the prefix cache reuses (chat's template opening; a run of words for
    // completions): the difference is the template's work and the chat path alone.
    const fixed = chatFixedPrefix(model, (n) => n + PROMPT);
    const bos = model.tokens.shouldPrependBosToken ? 1 : 0;
    let lead = "";
    for (let i = 0; count(`${lead}1000 ${PROMPT}`) - count(`1000 ${PROMPT}`) < fixed - bos && i < 64; i++) lead += "fox ";
    const probe = await streamOnce(`${base}/v1/chat/completions`, chatOf(`1000 ${PROMPT}`, 1), pid);
    let filler = "";
    for (let i = 0; count(`${lead}1000 ${PROMPT}${filler}`) + bos < probe.promptTokens && i < 64; i++) filler += " fox";
    const sameAsChat = (maxTokens: number) => ({ ...completions, max_tokens: maxTokens, prompt: lead + fresh() + PROMPT + filler });

    // Paired rounds: raw node-llama-cpp (this process) and svc alternate, so drift in the
    // machine's speed during the run affects both alike.
    const rounds: Round[] = [];
    for (let i = 0; i < reps; i++) {
      // which side goes first alternates by round, so neither always meets the core just after
      // the other's work (caches, frequency) or the switch of pinning
      const rawFirst = i % 2 === 0;
      const rawSingles = async () => {
        onCore(1);
        const raw = await rawDecodeBenchmark(file, { ...rawOpts, prompt: fresh() + PROMPT, model });
        const rawApi = await rawCompletionBenchmark(model, { ...rawOpts, prompt: fresh() + PROMPT });
        onCore(0);
        return { raw, rawApi };
      };
      const svcSingles = async () => ({
        viaCompletions: await streamOnce(`${base}/v1/completions`, { ...completions, prompt: fresh() + PROMPT }, pid),
        viaChat: await streamOnce(`${base}/v1/chat/completions`, chatOf(fresh() + PROMPT), pid),
      });
      const raw4Run = async () => {
        onCore(1);
        const r = await rawParallelDecodeBenchmark(model, { ...rawOpts, prompt: fresh() + PROMPT, sequences: 4 });
        onCore(0);
        return r;
      };
      const svc4Run = async () => {
        const t0 = performance.now();
        const runs = await Promise.all(Array.from({ length: 4 }, () => streamOnce(`${base}/v1/completions`, { ...completions, prompt: fresh() + PROMPT })));
        return (runs.reduce((a, r) => a + r.tokens, 0) * 1000) / (performance.now() - t0);
      };
      const [raws, svcs] = await inOrder(rawFirst, rawSingles, svcSingles);
      const [raw4, svc4] = await inOrder(rawFirst, raw4Run, svc4Run);
      const { raw, rawApi } = raws;
      const { viaCompletions, viaChat } = svcs;
      rounds.push({ raw, rawApi, viaCompletions, viaChat, raw4, svc4 });
    }
    // First-token pairs: short requests, many of them, the order alternating within each pair
    const firsts: FirstPair[] = [];
    for (let i = 0; i < pairs; i++) {
      const c = () => streamOnce(`${base}/v1/chat/completions`, chatOf(fresh() + PROMPT, 2), pid);
      const p = () => streamOnce(`${base}/v1/completions`, sameAsChat(2), pid);
      if (i % 2) firsts.push({ completions: await p(), chat: await c() });
      else firsts.push({ chat: await c(), completions: await p() });
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
    return report({ rounds, firsts, concurrency, bytes, tokens, reps, pinned, fixed, chatPromptTokens: probe.promptTokens });
  } finally {
    svc?.kill("SIGTERM");
    if (pinned) unpinSelf();
    await sleep(500);
    rmSync(tmp, { recursive: true, force: true });
  }
}

function report(d: { rounds: Round[]; firsts: FirstPair[]; concurrency: Record<number, { aggregateTps: number; perStreamTps: number }>; bytes: number; tokens: number; reps: number; pinned: boolean; fixed: number; chatPromptTokens: number }): Section {
  const { rounds, firsts, concurrency } = d;
  const m = (f: (r: Round) => number) => median(rounds.map(f));
  const rawTps = m((r) => r.raw.tokensPerSecond);
  const rawFirst = m((r) => r.raw.firstTokenMs);
  const cTps = m((r) => r.viaCompletions.decodeTps);
  const cFirst = m((r) => r.viaCompletions.firstMs);
  const chTps = m((r) => r.viaChat.decodeTps);
  const chFirst = m((r) => r.viaChat.firstMs);
  const perToken = (cpu: number, n: number) => cpu / Math.max(1, n);
  // decode only: from the first token on, over the tokens after it
  const rawCpu = m((r) => perToken(r.raw.decodeCpuMicros, r.raw.generatedTokens - 1));
  const apiCpu = m((r) => perToken(r.rawApi.decodeCpuMicros, r.rawApi.generatedTokens - 1));
  const apiTps = m((r) => r.rawApi.tokensPerSecond);
  const cCpu = m((r) => perToken(r.viaCompletions.decodeCpuMicros, r.viaCompletions.tokens - 1));
  const chCpu = m((r) => perToken(r.viaChat.decodeCpuMicros, r.viaChat.tokens - 1));
  const pct = (a: number) => `${((a / rawTps) * 100).toFixed(1)}%`;
  const us = (x: number) => `${x.toFixed(0)} µs`;
  const pr = (xs: number[]) => `${(median(xs) * 100).toFixed(1)}% (rounds ${xs.map((x) => (x * 100).toFixed(0)).join(", ")})`;
  const single = rounds.map((r) => r.viaCompletions.decodeTps / r.raw.tokensPerSecond);
  const singleChat = rounds.map((r) => r.viaChat.decodeTps / r.raw.tokensPerSecond);
  const four = rounds.map((r) => r.svc4 / r.raw4.aggregateTps);
  // CPU per decoded token, raw's over svc's in the same round: the decode's efficiency, which
  // other load on the machine moves far less than the wall-clock rates
  const cpuPer = (cpu: number, n: number) => cpu / Math.max(1, n - 1);
  const rawPer = (r: Round) => cpuPer(r.raw.decodeCpuMicros, r.raw.generatedTokens);
  const cpuRatio = (f: (r: Round) => StreamRun) => rounds.map((r) => rawPer(r) / cpuPer(f(r).decodeCpuMicros, f(r).tokens));
  const chatOver = firsts.map((p) => p.chat.firstMs - p.completions.firstMs);
  const chatCpuOver = firsts.map((p) => p.chat.cpuMicros - p.completions.cpuMicros);
  const q = (xs: number[], f: number) => [...xs].sort((a, b) => a - b)[Math.floor(f * (xs.length - 1))];
  const body = [
    `Model: generated \`medium\` GGUF (${(d.bytes / 2 ** 20).toFixed(0)} MiB); ${SETTINGS.threads} thread, context ${SETTINGS.contextSize} × ${SETTINGS.parallel} sequences for svc and raw alike; greedy (temperature 0, svc's resolved top-k/top-p/min-p passed to raw too); ${d.tokens} tokens; ${d.reps} paired rounds (medians), raw first in even rounds and svc first in odd ones. ` +
      "Raw = node-llama-cpp `sequence.evaluate` in the benchmark process (no svc code); svc = HTTP streaming from a separate `svc serve` process. " +
      (d.pinned ? "svc is pinned to core 1; raw decodes pinned to core 1 too, and the HTTP client runs on core 0. " : "Not pinned (no taskset or fewer than 2 cores). ") +
      "svc first-token time includes HTTP, JSON and SSE; raw's is prompt evaluation only. CPU per decoded token: every thread of the decoding process from the first token to the last, over the tokens after the first (less sensitive to other load than the wall-clock rates, though context switches on a busy machine still add to it).",
    "",
    table(["path", "decode tokens/s", "vs raw", "CPU per decoded token", "time to first token", "first-token overhead"], [
      ["raw node-llama-cpp", rawTps.toFixed(1), "100%", us(rawCpu), ms(rawFirst), "-"],
      ["raw node-llama-cpp through LlamaCompletion (svc's generation API, in process)", apiTps.toFixed(1), pct(apiTps), us(apiCpu), ms(m((r) => r.rawApi.firstTokenMs)), "-"],
      [`svc /v1/completions (${m((r) => r.viaCompletions.promptTokens)} prompt tokens; raw: ${m((r) => r.raw.promptTokens)})`, cTps.toFixed(1), pct(cTps), us(cCpu), ms(cFirst), ms(cFirst - rawFirst)],
      ["svc /v1/chat/completions (ChatML prompt)", chTps.toFixed(1), pct(chTps), us(chCpu), ms(chFirst), ms(chFirst - rawFirst)],
    ]),
    "",
    table(["paired measure (svc / raw per round)", "median (rounds)", "aim"], [
      ["single-stream decode, /v1/completions", pr(single), "≥ 97%"],
      ["single-stream decode, /v1/chat/completions", pr(singleChat), "≥ 97%"],
      ["single-stream CPU per decoded token, raw / svc, /v1/completions", pr(cpuRatio((r) => r.viaCompletions)), "-"],
      ["single-stream CPU per decoded token, raw / svc, /v1/chat/completions", pr(cpuRatio((r) => r.viaChat)), "-"],
      ["single-stream decode, /v1/completions / raw through LlamaCompletion (svc's own cost)", pr(rounds.map((r) => r.viaCompletions.decodeTps / r.rawApi.tokensPerSecond)), "-"],
      ["single-stream decode, raw through LlamaCompletion / raw (the API's cost)", pr(rounds.map((r) => r.rawApi.tokensPerSecond / r.raw.tokensPerSecond)), "-"],
      ["4 streams (/v1/completions) vs raw 4 sequences in one context, aggregate", pr(four), "≥ 90%"],
      [`chat first token minus /v1/completions first token, same prompt tokens (${firsts.length} pairs; quartiles)`, `${ms(median(chatOver))} (${ms(q(chatOver, 0.25))} to ${ms(q(chatOver, 0.75))})`, "< 5 ms"],
      ["the same pairs: svc CPU per chat request minus per completion", `${ms(median(chatCpuOver) / 1000)} (${ms(q(chatCpuOver, 0.25) / 1000)} to ${ms(q(chatCpuOver, 0.75) / 1000)})`, "-"],
    ]),
    "",
    `svc's CPU over raw's per decoded token: ${us(cCpu - rawCpu)} on /v1/completions, ${us(chCpu - rawCpu)} on chat; LlamaCompletion's over raw's: ${us(apiCpu - rawCpu)} ` +
      "(svc's window also holds its end of request and its background timers, amortized over the tokens). " +
      `First-token pairs: ${d.chatPromptTokens} prompt tokens each, of which ${d.fixed} a fixed opening on both paths (chat's template start; words for /v1/completions) that svc's prefix cache reuses.`,
    "",
    `Raw 4 sequences in one context: ${m((r) => r.raw4.aggregateTps).toFixed(1)} tokens/s aggregate (${(m((r) => r.raw4.aggregateTps) / rawTps).toFixed(2)}x one sequence); svc 4 streams: ${m((r) => r.svc4).toFixed(1)}. Raw's dispatch loop decodes 4 generating sequences 3 at a time; svc holds a step one event-loop turn for the fourth (engines/inference/step-batching.ts; bench/dev/batching.ts counts the sequences per decode).`,
    "",
    "Concurrent streams through /v1/chat/completions (one context, 4 sequences):",
    "",
    table(["streams", "aggregate tokens/s", "per-stream decode tokens/s"], [1, 2, 4].map((c) => [c, concurrency[c].aggregateTps.toFixed(1), concurrency[c].perStreamTps.toFixed(1)])),
  ].join("\n");
  return { title: "Inference: svc streaming vs raw node-llama-cpp", body, data: { rounds, firsts, concurrency, bytes: d.bytes, chatPromptTokens: d.chatPromptTokens, fixedOpening: d.fixed } };
}

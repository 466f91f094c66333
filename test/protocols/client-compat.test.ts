// Requests the official clients send that svc used to refuse or silently ignore: Go-style
// keep_alive durations ("1h30m", "5m0s") on the Ollama routes, keep_alive on /api/embed, Ollama's
// load-only requests (which must load), and the legacy completions' integer `logprobs`.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import OpenAI from "openai";
import { Ollama } from "ollama";
import { MODEL, openaiClient, startProtocolSvc, waitFor, type ProtocolSvc } from "./harness";

let t: ProtocolSvc;
let ollama: Ollama;
let openai: OpenAI;

beforeAll(async () => {
  t = await startProtocolSvc();
  ollama = new Ollama({ host: t.url });
  openai = openaiClient(t);
});
afterAll(() => t?.stop());

const loaded = async () => (await ollama.ps()).models.map((m) => m.name);

describe("Ollama keep_alive", () => {
  it("accepts Go durations with several parts, as Ollama's time.ParseDuration does", async () => {
    // "5m0s" is Go's own Duration.String(); "1h30m" what a user writes
    const g = await ollama.generate({ model: MODEL, prompt: "hi", keep_alive: "1h30m", options: { num_predict: 2 } });
    expect(g.done).toBe(true);
    const c = await ollama.chat({ model: MODEL, messages: [{ role: "user", content: "hi" }], keep_alive: "5m0s", options: { num_predict: 2 } });
    expect(c.done).toBe(true);
    expect(await loaded()).toContain(MODEL);
    // a zero written in several parts is still zero: unload
    const u = await ollama.generate({ model: MODEL, prompt: "", keep_alive: "0m0s" });
    expect(u.done_reason).toBe("unload");
    expect(await loaded()).not.toContain(MODEL);
  });

  it("still refuses what is not a duration", async () => {
    for (const bad of ["soon", "5 m", "1h30", "m5"]) {
      const e = await ollama.generate({ model: MODEL, prompt: "hi", keep_alive: bad as never, options: { num_predict: 1 } }).then(() => undefined, (x) => x);
      expect(e?.message, bad).toContain("keep_alive");
    }
  });

  it("/api/embed checks keep_alive and unloads the model after answering on 0", async () => {
    const e = await ollama.embed({ model: MODEL, input: "x", keep_alive: "soon" as never }).then(() => undefined, (x) => x);
    expect(e?.message).toContain("keep_alive");
    await ollama.embed({ model: MODEL, input: "x" });
    expect(await loaded()).toContain(MODEL);
    const r = await ollama.embed({ model: MODEL, input: "x", keep_alive: 0 });
    expect(r.embeddings).toHaveLength(1);
    await waitFor(async () => !(await loaded()).includes(MODEL));
  });
});

describe("Ollama load-only requests", () => {
  it("load the model, as Ollama does (clients send them to warm a model up)", async () => {
    await ollama.generate({ model: MODEL, prompt: "", keep_alive: 0 });
    expect(await loaded()).not.toContain(MODEL);
    const g = await ollama.generate({ model: MODEL, prompt: "" });
    expect(g.done_reason).toBe("load");
    expect(await loaded()).toContain(MODEL);

    await ollama.chat({ model: MODEL, messages: [], keep_alive: 0 });
    expect(await loaded()).not.toContain(MODEL);
    const c = await ollama.chat({ model: MODEL, messages: [] });
    expect(c.done_reason).toBe("load");
    expect(await loaded()).toContain(MODEL);
  });
});

describe("legacy completions", () => {
  it("refuses an integer logprobs (as chat refuses logprobs: true) rather than answering logprobs: null", async () => {
    const e = await openai.completions.create({ model: MODEL, prompt: "x", max_tokens: 2, logprobs: 2 }).then(() => undefined, (x) => x);
    expect(e).toBeInstanceOf(OpenAI.APIError);
    expect(e.status).toBe(400);
    expect(e.param).toBe("logprobs");
    // without logprobs the same request answers
    const ok = await openai.completions.create({ model: MODEL, prompt: "x", max_tokens: 2, logprobs: null });
    expect(ok.choices[0].text.length).toBeGreaterThan(0);
  });
});

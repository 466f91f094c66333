import path from "node:path";
import { getLlama, resolveChatWrapper, type Llama } from "node-llama-cpp";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { httpView } from "../helpers/errors";
import { collectChat } from "../../engines/chat/collect";
import type { ChatEvent } from "../../engines/chat/types";
import { ModelPool } from "../../engines/inference";
import { templateTokenizer } from "../../engines/inference/template-tokens";
import { SvcError } from "../../engines/errors";
import { chatReq, events, tinyModelsDir, tinySpec } from "./fixture";
import { until } from "../helpers/http";

let dir: string;
let llama: Llama;
let pool: ModelPool;

beforeAll(async () => {
  dir = await tinyModelsDir();
  llama = await getLlama({ gpu: false });
  pool = new ModelPool({ modelsDir: dir, llama });
  pool.register("tiny", tinySpec({ aliases: ["tiny-alias"] }));
}, 30_000);

afterAll(async () => {
  await pool?.close();
  await llama?.dispose();
});

async function waitFor(cond: () => boolean, ms = 5000) {
  for (const end = Date.now() + ms; !cond(); ) {
    if (Date.now() > end) throw new Error("condition not met in time");
    await new Promise((r) => setTimeout(r, 10));
  }
}

const weatherSchema = {
  type: "object",
  properties: {
    // bounded: weights are random, so only a length limit guarantees the string ends
    city: { type: "string", minLength: 1, maxLength: 24 },
    days: { type: "integer" },
  },
  required: ["city", "days"],
};

describe("ModelPool chat", { timeout: 30_000 }, () => {
  it("is deterministic at temperature 0, also across a fresh pool", async () => {
    const a = await collectChat(pool.chat(chatReq()));
    const b = await collectChat(pool.chat(chatReq()));
    expect(a.text.length).toBeGreaterThan(0);
    expect(b.text).toBe(a.text);
    const fresh = new ModelPool({ modelsDir: dir }); // its own llama.cpp instance
    try {
      fresh.register("other", tinySpec());
      const c = await collectChat(fresh.chat(chatReq({ model: "other" })));
      expect(c.text).toBe(a.text);
    } finally {
      await fresh.close();
    }
  });

  it("ends with length at maxTokens and reports usage", async () => {
    const r = await collectChat(pool.chat(chatReq({ maxTokens: 12 })));
    expect(r.finishReason).toBe("length");
    expect(r.usage.completionTokens).toBe(12);
    expect(r.usage.promptTokens).toBeGreaterThan(5);
  });

  it("streams several text events", async () => {
    const evs = await events(pool.chat(chatReq({ maxTokens: 10 })));
    expect(evs.filter((e) => e.type === "text").length).toBeGreaterThanOrEqual(2);
    expect(evs.at(-1)?.type).toBe("done");
  });

  it("ends with stop at a stop string, without emitting it", async () => {
    const full = await collectChat(pool.chat(chatReq({ maxTokens: 40 })));
    const stop = full.text.slice(6, 10);
    const r = await collectChat(pool.chat(chatReq({ maxTokens: 40, sampling: { temperature: 0, stop: [stop] } })));
    expect(r.finishReason).toBe("stop");
    expect(r.text).toBe(full.text.slice(0, full.text.indexOf(stop)));
  });

  it("resolves aliases and raw completions", async () => {
    const r = await collectChat(pool.chat(chatReq({ model: "tiny-alias", messages: [], prompt: "The world", maxTokens: 8 })));
    expect(r.finishReason).toBe("length");
    expect(r.usage.completionTokens).toBe(8);
    expect(r.text.length).toBeGreaterThan(0);
  });

  it("reuses the cached prompt prefix of a sequence", async () => {
    const before = pool.stats().totals.promptTokensReused;
    const first = await collectChat(pool.chat(chatReq({ messages: [{ role: "user", content: "tell me about the people here" }] })));
    await collectChat(pool.chat(chatReq({ messages: [{ role: "user", content: "tell me about the people here" }] })));
    expect(pool.stats().totals.promptTokensReused - before).toBeGreaterThanOrEqual(first.usage.promptTokens - 1);
  });

  it("forces a call of the named tool whose arguments stream and validate", async () => {
    const evs = await events(pool.chat(chatReq({
      maxTokens: 200,
      messages: [{ role: "user", content: "weather in Paris for 3 days?" }],
      tools: [{ name: "get_weather", description: "Weather forecast", parameters: weatherSchema }],
      toolChoice: { name: "get_weather" },
    })));
    const start = evs.find((e) => e.type === "tool_call_start") as Extract<ChatEvent, { type: "tool_call_start" }>;
    expect(start).toMatchObject({ index: 0, name: "get_weather" });
    expect(start.id).toMatch(/^call_/);
    const deltas = evs.filter((e) => e.type === "tool_call_delta") as Extract<ChatEvent, { type: "tool_call_delta" }>[];
    expect(deltas.length).toBeGreaterThanOrEqual(2);
    const args = JSON.parse(deltas.map((d) => d.argumentsDelta).join(""));
    expect(typeof args.city).toBe("string");
    expect(args.city.length).toBeGreaterThanOrEqual(1);
    expect(args.city.length).toBeLessThanOrEqual(24);
    expect(Number.isSafeInteger(args.days)).toBe(true);
    expect(evs.at(-1)).toMatchObject({ type: "done", finishReason: "tool_calls" });
  });

  it("with tool_choice required among several tools, calls one of them validly", async () => {
    const tools = [
      { name: "get_weather", parameters: weatherSchema },
      { name: "get_time", parameters: { type: "object", properties: { zone: { type: "string", maxLength: 16 } }, required: ["zone"] } },
    ];
    const r = await collectChat(pool.chat(chatReq({ maxTokens: 200, tools, toolChoice: "required" })));
    expect(r.finishReason).toBe("tool_calls");
    expect(r.toolCalls).toHaveLength(1);
    const call = r.toolCalls[0];
    const args = JSON.parse(call.arguments);
    // either tool is a valid choice; whichever it is, its arguments are valid for it
    const shape = call.name === "get_time" ? { name: call.name, zone: typeof args.zone } : { name: call.name, city: typeof args.city, days: Number.isSafeInteger(args.days) };
    expect(shape).toEqual(call.name === "get_time" ? { name: "get_time", zone: "string" } : { name: "get_weather", city: "string", days: true });
  });

  it("constrains plain output to a response schema", async () => {
    const r = await collectChat(pool.chat(chatReq({ maxTokens: 100, responseSchema: { type: "object", properties: { ok: { type: "boolean" } }, required: ["ok"] } })));
    expect(typeof JSON.parse(r.text).ok).toBe("boolean");
  });

  it("with tool_choice auto, generates (the random model answers in text)", async () => {
    const r = await collectChat(pool.chat(chatReq({ tools: [{ name: "get_weather", parameters: weatherSchema }], toolChoice: "auto" })));
    expect(["length", "stop", "tool_calls"]).toContain(r.finishReason);
  });

  it("renders a conversation with earlier tool calls and their results", async () => {
    const messages = [
      { role: "system" as const, content: "be brief" },
      { role: "user" as const, content: "weather in paris?" },
      { role: "assistant" as const, content: "", toolCalls: [{ id: "call_1", name: "get_weather", arguments: '{"city":"paris","days":1}' }] },
      { role: "tool" as const, toolCallId: "call_1", content: '{"temp": 20}' },
    ];
    const plain = await collectChat(pool.chat(chatReq({ messages, maxTokens: 4 })));
    expect(plain.usage).toMatchObject({ completionTokens: 4 });
    const auto = await collectChat(pool.chat(chatReq({ messages, maxTokens: 4, tools: [{ name: "get_weather", parameters: weatherSchema }] })));
    expect(auto.usage.promptTokens).toBeGreaterThan(plain.usage.promptTokens); // the functions are documented in the prompt
  });

  it("tokenizes chat prompts as the model's tokenizer does, with the template's pieces kept per model", async () => {
    const model = await llama.loadModel({ modelPath: path.join(dir, "svc-tiny.gguf") });
    try {
      const wrapper = resolveChatWrapper(model);
      const kept = templateTokenizer(model);
      for (const text of ["hello", "hello again, a longer turn", "<|im_start|> typed by a user", "hello"]) {
        const { contextText } = wrapper.generateContextState({ chatHistory: [{ type: "system", text: "be brief" }, { type: "user", text }] });
        const expected = contextText.tokenize(model.tokenizer);
        expect(contextText.tokenize(kept)).toEqual(expected);
        expect(contextText.tokenize(kept)).toEqual(expected); // the second time from the kept pieces
      }
    } finally {
      await model.dispose();
    }
  });

  it("serves two chats at once on two sequences", async () => {
    const seen: number[] = [];
    const run = async (content: string) => {
      let n = 0;
      let done: ChatEvent | undefined;
      for await (const ev of pool.chat(chatReq({ maxTokens: 30, messages: [{ role: "user", content }] }))) {
        if (++n === 3) seen.push(pool.stats().totals.activeLeases);
        if (ev.type === "done") done = ev;
      }
      return done;
    };
    const [a, b] = await Promise.all([run("first question"), run("second question")]);
    expect(a).toMatchObject({ finishReason: "length", usage: { completionTokens: 30 } });
    expect(b).toMatchObject({ finishReason: "length", usage: { completionTokens: 30 } });
    expect(Math.max(...seen)).toBe(2);
    expect(pool.stats().totals.activeLeases).toBe(0);
  });

  it("stops and releases the lease when the caller aborts or stops reading", async () => {
    const ac = new AbortController();
    let n = 0;
    await expect((async () => {
      for await (const ev of pool.chat(chatReq({ maxTokens: 5000 }), ac.signal)) {
        if (ev.type === "text" && ++n === 3) ac.abort();
      }
    })()).rejects.toMatchObject({ name: "AbortError" });
    expect(n).toBeLessThan(50);
    expect(pool.stats().totals.activeLeases).toBe(0);

    for await (const ev of pool.chat(chatReq({ maxTokens: 5000 }))) if (ev.type === "text") break;
    expect(pool.stats().totals.activeLeases).toBe(0);
  });

  it("queues FIFO beyond the sequences and refuses beyond the queue bound", async () => {
    const small = new ModelPool({ modelsDir: dir, llama, maxQueue: 1 });
    small.register("one", tinySpec({ parallel: 1 }));
    try {
      const ac = new AbortController();
      const first = small.chat(chatReq({ model: "one", maxTokens: 5000 }), ac.signal)[Symbol.asyncIterator]();
      await first.next(); // holds the only sequence
      const second = collectChat(small.chat(chatReq({ model: "one", maxTokens: 4 })));
      await waitFor(() => small.stats().models[0]?.queued === 1);
      expect(small.stats().models[0]).toMatchObject({ activeLeases: 1, queued: 1 });
      await expect(collectChat(small.chat(chatReq({ model: "one" }))).catch(httpView)).resolves.toMatchObject({ code: "capacity_exceeded", status: 429 });
      await first.return(undefined);
      expect((await second).usage.completionTokens).toBe(4);
      expect(small.stats().models[0]).toMatchObject({ activeLeases: 0, queued: 0 });
    } finally {
      await small.close();
    }
  });

  it("refuses a prompt longer than the context", async () => {
    pool.register("short", tinySpec({ contextSize: 128 }));
    await expect(collectChat(pool.chat(chatReq({ model: "short", messages: [{ role: "user", content: "the people ".repeat(200) }] }))).catch(httpView))
      .resolves.toMatchObject({ code: "context_length_exceeded", status: 400 });
    pool.unregister("short");
  });
});

describe("ModelPool lifecycle", { timeout: 30_000 }, () => {
  it("unloads after the idle interval and reloads on the next request", async () => {
    pool.register("idle", tinySpec({ idleUnloadSeconds: 1 }));
    await collectChat(pool.chat(chatReq({ model: "idle", maxTokens: 2 })));
    const loaded = pool.stats().models.find((m) => m.name === "idle");
    expect(loaded?.idleUnloadAt).toBeDefined();
    // unloaded once the idle interval passes: polled, not slept
    await until(() => pool.stats().models.find((m) => m.name === "idle") === undefined, 10_000);
    expect(pool.stats().models.find((m) => m.name === "idle")).toBeUndefined();
    expect(pool.list().find((m) => m.name === "idle")?.loaded).toBe(false);
    const r = await collectChat(pool.chat(chatReq({ model: "idle", maxTokens: 2 })));
    expect(r.usage.completionTokens).toBe(2);
    expect(pool.stats().models.find((m) => m.name === "idle")?.loadedAt).not.toBe(loaded?.loadedAt);
    pool.unregister("idle");
  });

  it("reloads when re-registered with a changed spec", async () => {
    pool.register("re", tinySpec());
    await collectChat(pool.chat(chatReq({ model: "re", maxTokens: 2 })));
    expect(pool.stats().models.find((m) => m.name === "re")?.sequences).toBe(2);
    pool.register("re", tinySpec()); // equal spec: stays loaded
    expect(pool.list().find((m) => m.name === "re")?.loaded).toBe(true);
    pool.register("re", tinySpec({ parallel: 3 }));
    expect(pool.list().find((m) => m.name === "re")?.loaded).toBe(false);
    await collectChat(pool.chat(chatReq({ model: "re", maxTokens: 2 })));
    expect(pool.stats().models.find((m) => m.name === "re")?.sequences).toBe(3);
    pool.unregister("re");
    expect(pool.has("re")).toBe(false);
  });

  it("embeds into vectors of the embedding length", async () => {
    const info = await pool.info("tiny");
    const r = await pool.embed({ model: "tiny", input: ["hello world", "the people"] });
    expect(r.vectors).toHaveLength(2);
    expect(r.vectors[0]).toHaveLength(info.embeddingLength!);
    expect(r.vectors[0].every(Number.isFinite)).toBe(true);
    expect(r.promptTokens).toBeGreaterThan(2);
    await expect(pool.embed({ model: "tiny", input: [""] })).rejects.toMatchObject({ code: "invalid_request" });
  });

  it("describes a model", async () => {
    const info = await pool.info("tiny");
    expect(info).toMatchObject({ architecture: "llama", embeddingLength: 64, quantization: "F32", capabilities: ["completion", "tools", "embedding"] });
    expect(info.chatTemplate).toContain("<|im_start|>");
    expect(info.parameterCount).toBeGreaterThan(100_000);
    expect(info.file).toBe(path.join(dir, "svc-tiny.gguf"));
    expect(await pool.countTokens("tiny", "hello world")).toBe(2);
  });

  it("reports a missing file, an unknown model, and too little memory as model_unavailable", async () => {
    pool.register("gone", tinySpec({ file: "missing.gguf" }));
    const err = await collectChat(pool.chat(chatReq({ model: "gone" }))).catch((e) => e);
    expect(err).toBeInstanceOf(SvcError);
    expect(httpView(err)).toMatchObject({ code: "model_unavailable", status: 503 });
    expect(err.message).toMatch(/file not found/);
    await expect(pool.info("gone")).rejects.toMatchObject({ code: "model_unavailable" });
    await expect(collectChat(pool.chat(chatReq({ model: "nope" })))).rejects.toMatchObject({ code: "model_unavailable" });
    pool.unregister("gone");

    const starved = new ModelPool({ modelsDir: dir, llama, freeMemory: () => 1024 });
    starved.register("tiny", tinySpec());
    await expect(collectChat(starved.chat(chatReq()))).rejects.toThrow(/not enough memory/);
    await starved.close();
  });
});

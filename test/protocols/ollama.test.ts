// The official `ollama` client against svc's Ollama routes on the generated tiny model.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Ollama } from "ollama";
import Ajv from "ajv";
import { MODEL, startProtocolSvc, type ProtocolSvc } from "./harness";

let t: ProtocolSvc;
let client: Ollama;

beforeAll(async () => {
  t = await startProtocolSvc();
  client = new Ollama({ host: t.url });
});
afterAll(async () => {
  await t?.stop();
});

const user = (content: string) => [{ role: "user", content }];

describe("ollama chat", () => {
  it("answers non-streamed", async () => {
    const r = await client.chat({ model: MODEL, messages: user("hello"), options: { temperature: 0, num_predict: 6 } });
    expect(r.model).toBe(MODEL);
    expect(r.done).toBe(true);
    expect(r.done_reason).toBe("length");
    expect(r.message.role).toBe("assistant");
    expect(r.message.content.length).toBeGreaterThan(0);
    expect(r.eval_count).toBe(6);
    expect(r.prompt_eval_count).toBeGreaterThan(0);
    expect(r.total_duration).toBeGreaterThan(0);
  });

  it("streams NDJSON pieces ending with done", async () => {
    const whole = await client.chat({ model: MODEL, messages: user("stream"), options: { temperature: 0, num_predict: 6 } });
    const parts = await client.chat({ model: MODEL, messages: user("stream"), options: { temperature: 0, num_predict: 6 }, stream: true });
    let text = "";
    let last: any;
    let pieces = 0;
    for await (const p of parts) {
      if (!p.done) pieces++;
      text += p.message.content;
      last = p;
    }
    expect(pieces).toBeGreaterThan(1);
    expect(text).toBe(whole.message.content);
    expect(last.done).toBe(true);
    expect(last.done_reason).toBe("length");
    expect(last.eval_count).toBe(6);
  });

  it("streams by default (raw NDJSON)", async () => {
    const res = await fetch(`${t.url}/api/chat`, { method: "POST", body: JSON.stringify({ model: MODEL, messages: user("hi"), options: { num_predict: 3 } }) });
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toMatch(/application\/x-ndjson/);
    const lines = (await res.text()).trim().split("\n").map((l) => JSON.parse(l));
    expect(lines.length).toBeGreaterThan(1);
    expect(lines.at(-1).done).toBe(true);
    expect(lines.slice(0, -1).every((l) => l.done === false)).toBe(true);
  });

  it("returns tool calls with object arguments, and honours format schemas", async () => {
    const schema = { type: "object", properties: { answer: { type: "string", maxLength: 12 }, sure: { type: "boolean" } }, required: ["answer", "sure"], additionalProperties: false };
    const r = await client.chat({ model: MODEL, messages: user("reply in JSON"), format: schema, options: { temperature: 0, num_predict: 120 } });
    expect(r.done_reason).toBe("stop");
    expect(new Ajv().compile(schema)(JSON.parse(r.message.content))).toBe(true);
    const withTools = await client.chat({
      model: MODEL,
      messages: [
        { role: "user", content: "weather?" },
        { role: "assistant", content: "", tool_calls: [{ function: { name: "get_weather", arguments: { city: "Rome" } } }] },
        { role: "tool", content: "sunny", tool_name: "get_weather" },
      ],
      tools: [{ type: "function", function: { name: "get_weather", description: "weather", parameters: { type: "object", properties: { city: { type: "string" } }, required: ["city"] } } }],
      options: { num_predict: 4 },
    });
    expect(withTools.done).toBe(true);
    for (const c of withTools.message.tool_calls ?? []) expect(typeof c.function.arguments).toBe("object");
  });
});

describe("ollama generate, embed, tags, show, version", () => {
  it("generates, streamed and not", async () => {
    const r = await client.generate({ model: MODEL, prompt: "Once upon a time", options: { temperature: 0, num_predict: 5 } });
    expect(r.done).toBe(true);
    expect(r.done_reason).toBe("length");
    expect(r.response!.length).toBeGreaterThan(0);
    const parts = await client.generate({ model: MODEL, prompt: "Once upon a time", options: { temperature: 0, num_predict: 5 }, stream: true });
    let text = "";
    for await (const p of parts) text += p.response;
    expect(text).toBe(r.response);
    const raw = await client.generate({ model: MODEL, prompt: "Once upon a time", raw: true, system: "ignored in raw mode", options: { temperature: 0, num_predict: 5 } });
    expect(raw.response!.length).toBeGreaterThan(0);
  });

  it("answers an empty prompt with a load", async () => {
    const r = await client.generate({ model: MODEL, prompt: "" });
    expect(r.done).toBe(true);
    expect(r.done_reason).toBe("load");
  });

  it("embeds", async () => {
    const r = await client.embed({ model: MODEL, input: ["hello", "world"] });
    expect(r.model).toBe(MODEL);
    expect(r.embeddings).toHaveLength(2);
    expect(r.embeddings[0].length).toBeGreaterThan(0);
    const one = await client.embed({ model: MODEL, input: "hello" });
    expect(one.embeddings[0][0]).toBeCloseTo(r.embeddings[0][0], 5);
  });

  it("lists tags (/api/tags and /v1/tags)", async () => {
    const r = await client.list();
    const m = r.models.find((x) => x.name === MODEL)!;
    expect(m).toBeTruthy();
    expect(m.model).toBe(MODEL);
    expect(m.size).toBeGreaterThan(0);
    expect(m.digest).toMatch(/^[0-9a-f]{64}$/);
    expect(m.details.format).toBe("gguf");
    expect(m.details.family).toBe("llama");
    expect(m.details.quantization_level).toBe("F32");
    expect(m.details.parameter_size).toMatch(/^\d+(\.\d)?[KMB]$/);
    const v1 = (await (await fetch(`${t.url}/v1/tags`)).json()) as any;
    expect(v1.models.map((x: any) => x.name)).toEqual(r.models.map((x) => x.name));
  });

  it("shows metadata and capabilities", async () => {
    const r = await client.show({ model: MODEL });
    expect(r.capabilities).toContain("completion");
    expect(r.capabilities).toContain("embedding");
    expect(r.details.family).toBe("llama");
    expect(r.template).toContain("<|im_start|>");
    expect(r.modelfile).toMatch(/^# Modelfile generated by svc/);
    expect(r.parameters).toMatch(/num_ctx\s+1024/);
    const info = r.model_info as unknown as Record<string, unknown>;
    expect(info["general.architecture"]).toBe("llama");
    expect(info["llama.context_length"]).toBeGreaterThan(0);
    expect(info["general.parameter_count"]).toBeGreaterThan(0);
    const byName = (await (await fetch(`${t.url}/api/show`, { method: "POST", body: JSON.stringify({ name: `${MODEL}:latest` }) })).json()) as any;
    expect(byName.details.family).toBe("llama");
  });

  it("lists loaded models (ps)", async () => {
    const r = await client.ps();
    expect(r.models.map((m) => m.name)).toContain(MODEL);
  });

  it("reports a version", async () => {
    const v = await client.version();
    expect(typeof v.version).toBe("string");
  });
});

describe("invalid requests get Ollama-shaped errors", () => {
  const post = async (path: string, body: unknown) => {
    const res = await fetch(`${t.url}${path}`, { method: "POST", body: JSON.stringify(body) });
    return { status: res.status, json: (await res.json()) as any };
  };

  it("unknown model -> 404 model 'x' not found", async () => {
    const e: any = await client.chat({ model: "nope", messages: user("x") }).then(() => null, (x) => x);
    expect(e?.status_code).toBe(404);
    expect(e.error).toBe("model 'nope' not found");
    for (const [path, body] of [
      ["/api/chat", { model: "nope", messages: user("x") }],
      ["/api/generate", { model: "nope", prompt: "x" }],
      ["/api/embed", { model: "nope", input: "x" }],
      ["/api/show", { model: "nope" }],
    ] as const) {
      const r = await post(path, body);
      expect(r.status, path).toBe(404);
      expect(r.json).toEqual({ error: "model 'nope' not found" });
    }
  });

  it("empty messages load the model (as Ollama does); messages that are not an array -> 400", async () => {
    const ok = await post("/api/chat", { model: MODEL, messages: [] });
    expect(ok.status).toBe(200);
    expect(ok.json).toMatchObject({ model: MODEL, done: true, done_reason: "load" });
    const r = await post("/api/chat", { model: MODEL, messages: "hi" });
    expect(r.status).toBe(400);
    expect(typeof r.json.error).toBe("string");
  });

  it("num_predict 0 or huge -> 400", async () => {
    for (const n of [0, 1e9]) {
      const r = await post("/api/chat", { model: MODEL, messages: user("x"), options: { num_predict: n } });
      expect(r.status).toBe(400);
      expect(r.json.error).toMatch(/num_predict/);
    }
  });

  it("bad format and malformed JSON -> 400", async () => {
    expect((await post("/api/chat", { model: MODEL, messages: user("x"), format: "yaml" })).status).toBe(400);
    const res = await fetch(`${t.url}/api/chat`, { method: "POST", body: "{" });
    expect(res.status).toBe(400);
    expect(typeof ((await res.json()) as any).error).toBe("string");
  });
});

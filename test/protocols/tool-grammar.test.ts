// Forced tool calls and response_format json_schema on the generated GGUF model: the grammar
// honours minimum/maximum (and exclusive ones) for integers and numbers, minLength/maxLength and
// pattern for strings, enum; and strings without maxLength still end within max_tokens. Every
// answer must parse as JSON and satisfy its schema (ajv), across several sampled generations.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import OpenAI from "openai";
import Ajv from "ajv";
import { MODEL, type ProtocolSvc, startWithOpenAI } from "./harness";

let t: ProtocolSvc;
let client: OpenAI;
const ajv = new Ajv({ strict: false });

beforeAll(async () => ({ t, client } = await startWithOpenAI()));
afterAll(() => t?.stop());

const closed = (properties: Record<string, unknown>) => ({ type: "object", properties, required: Object.keys(properties), additionalProperties: false });

const SCHEMAS: Record<string, Record<string, unknown>> = {
  ranges: closed({
    small: { type: "integer", minimum: 3, maximum: 17 },
    big: { type: "integer", minimum: 1000 },
    negative: { type: "integer", maximum: -10 },
    ratio: { type: "number", minimum: -2.5, maximum: 7.25 },
    open: { type: "integer", exclusiveMinimum: -5, exclusiveMaximum: 5 },
    unit: { type: "number", exclusiveMinimum: 0, exclusiveMaximum: 1 },
  }),
  strings: closed({
    code: { type: "string", pattern: "^[A-Z]{3}-\\d{2,4}$" },
    word: { type: "string", pattern: "(cat|dog)s?" },
    name: { type: "string", minLength: 2, maxLength: 5 },
    color: { enum: ["red", "green", "blue"] },
  }),
  free: closed({
    title: { type: "string" },
    body: { type: "string" },
    tags: { type: "array", items: { type: "string", maxLength: 6 }, maxItems: 2 },
    level: { type: ["integer", "null"], minimum: 1, maximum: 3 },
  }),
};

async function forced(name: string, schema: Record<string, unknown>, opts: { seed: number; max_tokens: number }) {
  const r = await client.chat.completions.create({
    model: MODEL,
    messages: [{ role: "user", content: `call ${name}` }],
    tools: [{ type: "function", function: { name, parameters: schema } }],
    tool_choice: { type: "function", function: { name } },
    temperature: 1,
    seed: opts.seed,
    max_tokens: opts.max_tokens,
  });
  const call = r.choices[0].message.tool_calls?.[0];
  expect(call?.type).toBe("function");
  return { finish: r.choices[0].finish_reason, args: (call as { function: { arguments: string } }).function.arguments };
}

function expectValid(schema: Record<string, unknown>, text: string) {
  let value: unknown;
  expect(() => (value = JSON.parse(text)), text).not.toThrow();
  const validate = ajv.compile(schema);
  expect(validate(value), `${text}\n${JSON.stringify(validate.errors)}`).toBe(true);
}

describe("forced tool calls follow the schema's constraints", () => {
  for (const [name, schema] of Object.entries(SCHEMAS)) {
    it(`${name}: arguments parse and validate across sampled generations`, async () => {
      for (const seed of [1, 2, 3, 4]) {
        const { finish, args } = await forced(name, schema, { seed, max_tokens: 400 });
        expectValid(schema, args);
        expect(finish).toBe("tool_calls");
      }
    });
  }

  it("free strings end within a small max_tokens, so the call still completes", async () => {
    const schema = SCHEMAS.free;
    for (const seed of [5, 6, 7]) {
      const { finish, args } = await forced("free", schema, { seed, max_tokens: 120 });
      expectValid(schema, args);
      expect(finish).toBe("tool_calls");
    }
  });

  it("tool_choice required among several tools, with constraints", async () => {
    const r = await client.chat.completions.create({
      model: MODEL,
      messages: [{ role: "user", content: "pick one" }],
      tools: ["strings", "free"].map((name) => ({ type: "function" as const, function: { name, parameters: SCHEMAS[name] } })),
      tool_choice: "required",
      temperature: 1,
      seed: 9,
      max_tokens: 400,
    });
    const call = r.choices[0].message.tool_calls![0] as { function: { name: string; arguments: string } };
    expectValid(SCHEMAS[call.function.name], call.function.arguments);
  });
});

describe("response_format json_schema follows the constraints", () => {
  it("answers a value that validates", async () => {
    const schema = closed({ n: { type: "integer", minimum: 40, maximum: 42 }, id: { type: "string", pattern: "^id-[a-f0-9]{4}$" }, note: { type: "string" } });
    for (const seed of [1, 2]) {
      const r = await client.chat.completions.create({
        model: MODEL,
        messages: [{ role: "user", content: "json please" }],
        response_format: { type: "json_schema", json_schema: { name: "thing", schema } },
        temperature: 1,
        seed,
        max_tokens: 80,
      });
      expectValid(schema, r.choices[0].message.content ?? "");
    }
  });

  it("refuses a schema no value can satisfy, with a 400", async () => {
    const schema = closed({ n: { type: "integer", minimum: 5, maximum: 4 } });
    await expect(
      client.chat.completions.create({ model: MODEL, messages: [{ role: "user", content: "x" }], response_format: { type: "json_schema", json_schema: { name: "x", schema } }, max_tokens: 10 }),
    ).rejects.toMatchObject({ status: 400 });
  });
});

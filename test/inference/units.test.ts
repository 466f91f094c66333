// Pure pieces: sampling resolution, JSON Schema mapping, the wrapped-call stream parser.
import { describe, expect, it } from "vitest";
import { BUILTIN_SAMPLING_DEFAULTS, resolveSampling, samplingSources, SERVER_SAMPLING_DEFAULTS } from "../../engines/inference";
import { toGbnfSchema } from "../../engines/inference/json-schema";
import { WrappedCallParser } from "../../engines/inference/wrapped-call";

describe("resolveSampling", () => {
  it("takes the request, then the manifest, then server defaults", () => {
    const s = resolveSampling(
      { sampling: { temperature: 0.1, stop: ["END", ""] }, maxTokens: undefined },
      { sampling: { temperature: 0.5, topK: 7, maxTokens: 99 } },
    );
    expect(s.temperature).toBe(0.1);
    expect(s.topK).toBe(7);
    expect(s.topP).toBe(SERVER_SAMPLING_DEFAULTS.topP);
    expect(s.maxTokens).toBe(99);
    expect(s.stop).toEqual(["END"]);
    expect(s.seed).toBeUndefined();
    expect(resolveSampling({ sampling: {}, maxTokens: 5 }, {}).maxTokens).toBe(5);
    expect(resolveSampling({ sampling: {} }, {}).temperature).toBe(SERVER_SAMPLING_DEFAULTS.temperature);
  });

  it("puts Server.spec.generation between the model's values and the built-in ones", () => {
    const server = { temperature: 0.3, topK: 11, maxTokens: 64, seed: 5 };
    const s = resolveSampling({ sampling: { topP: 0.5 } }, { sampling: { topK: 7 } }, server);
    expect([s.topP, s.topK, s.temperature, s.maxTokens, s.seed, s.minP]).toEqual([0.5, 7, 0.3, 64, 5, BUILTIN_SAMPLING_DEFAULTS.minP]);
    expect(samplingSources({ topP: 0.5 }, { topK: 7 }, server)).toMatchObject({
      topP: { value: 0.5, source: "request" },
      topK: { value: 7, source: "model" },
      temperature: { value: 0.3, source: "server" },
      minP: { value: BUILTIN_SAMPLING_DEFAULTS.minP, source: "builtin" },
      stop: { value: [], source: "unset" },
    });
  });
});

describe("toGbnfSchema", () => {
  it("keeps shape and types, drops what a grammar cannot express", () => {
    expect(toGbnfSchema({
      type: "object",
      properties: { a: { type: "string", pattern: "x+" }, b: { type: ["integer", "null"], minimum: 3 }, c: { anyOf: [{ type: "boolean" }, { $ref: "#/definitions/D" }] } },
      required: ["a"],
      definitions: { D: { enum: ["x", "y"] } },
    })).toEqual({
      type: "object",
      properties: { a: { type: "string" }, b: { type: ["integer", "null"] }, c: { oneOf: [{ type: "boolean" }, { $ref: "#/$defs/D" }] } },
      $defs: { D: { enum: ["x", "y"] } },
    });
    expect(toGbnfSchema({ type: "object" })).toEqual({ type: "object", properties: {}, additionalProperties: true });
  });
});

describe("WrappedCallParser", () => {
  it("yields the name, then only the arguments, across arbitrary chunking", () => {
    const text = '{"name": "get_time", "arguments": { "zone": "a}b\\"c", "n": [1, {"x": 2}] }}\n';
    for (const size of [1, 3, 7, 100]) {
      const p = new WrappedCallParser();
      let name: string | undefined;
      let args = "";
      for (let i = 0; i < text.length; i += size) {
        const r = p.push(text.slice(i, i + size));
        if (r.name) name = r.name;
        args += r.args;
      }
      expect(name).toBe("get_time");
      expect(JSON.parse(args)).toEqual({ zone: 'a}b"c', n: [1, { x: 2 }] });
      expect(args.startsWith("{")).toBe(true);
    }
  });
});

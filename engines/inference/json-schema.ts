// Maps a client's JSON Schema (tool parameters, response_format) onto the subset node-llama-cpp
// turns into a grammar. Constraints the grammar cannot express (pattern, minimum, ...) are
// dropped: the output still has the right shape and types.
import { type GbnfJsonSchema, type Llama, LlamaGrammar } from "node-llama-cpp";

type Json = Record<string, unknown>;
const isObj = (v: unknown): v is Json => typeof v === "object" && v !== null && !Array.isArray(v);
const PRIMITIVES = ["string", "number", "integer", "boolean", "null"];

/** Any JSON value (node-llama-cpp has no "any" keyword; these alternatives cover it). */
const ANY: Json = {
  oneOf: [{ type: ["string", "number", "boolean", "null"] }, { type: "object", additionalProperties: true }, { type: "array" }],
};

function convertDefs(defs: unknown): Json | undefined {
  if (!isObj(defs)) return undefined;
  return Object.fromEntries(Object.entries(defs).map(([k, v]) => [k, convert(v)]));
}

function withDefs(out: Json, s: Json): Json {
  const defs = convertDefs(s.$defs ?? s.definitions);
  return defs ? { ...out, $defs: defs } : out;
}

function mergeAllOf(s: Json): Json {
  const parts = (s.allOf as unknown[]).filter(isObj);
  const merged: Json = { ...s, allOf: undefined };
  const props: Json = {};
  const required = new Set<string>();
  for (const p of [s, ...parts]) {
    if (isObj(p.properties)) Object.assign(props, p.properties);
    if (Array.isArray(p.required)) p.required.forEach((r) => required.add(String(r)));
    if (p.type && !merged.type) merged.type = p.type;
  }
  if (Object.keys(props).length) Object.assign(merged, { type: merged.type ?? "object", properties: props, required: [...required] });
  return merged;
}

function convertTyped(type: string, s: Json): Json {
  const d = typeof s.description === "string" ? { description: s.description } : {};
  switch (type) {
    case "object": {
      const props = isObj(s.properties) ? s.properties : {};
      const entries = Object.entries(props);
      const out: Json = { type: "object", ...d, properties: Object.fromEntries(entries.map(([k, v]) => [k, convert(v)])) };
      // A bare {type: object} is a free-form object; declared properties alone are the shape.
      if (s.additionalProperties === true || (s.additionalProperties === undefined && entries.length === 0)) out.additionalProperties = true;
      else if (isObj(s.additionalProperties)) out.additionalProperties = convert(s.additionalProperties);
      for (const k of ["minProperties", "maxProperties"]) if (typeof s[k] === "number") out[k] = s[k];
      return withDefs(out, s);
    }
    case "array": {
      const out: Json = { type: "array", ...d };
      if (Array.isArray(s.items)) out.prefixItems = s.items.map(convert);
      else if (s.items !== undefined) out.items = convert(s.items);
      if (Array.isArray(s.prefixItems)) out.prefixItems = s.prefixItems.map(convert);
      for (const k of ["minItems", "maxItems"]) if (typeof s[k] === "number") out[k] = s[k];
      return withDefs(out, s);
    }
    case "string": {
      if (s.format === "date-time" || s.format === "date" || s.format === "time") return { type: "string", format: s.format, ...d };
      const out: Json = { type: "string", ...d };
      for (const k of ["minLength", "maxLength"]) if (typeof s[k] === "number") out[k] = s[k];
      return out;
    }
    default:
      return { type, ...d };
  }
}

export function convert(schema: unknown): Json {
  if (!isObj(schema)) return ANY; // `true`, missing, or not a schema
  let s = schema;
  if (Array.isArray(s.allOf)) s = mergeAllOf(s);
  if (typeof s.$ref === "string") {
    const m = /^#\/(?:\$defs|definitions)\/(.+)$/.exec(s.$ref);
    return m ? withDefs({ $ref: `#/$defs/${m[1]}` }, s) : ANY;
  }
  if ("const" in s) return { const: s.const as never };
  if (Array.isArray(s.enum)) return { enum: s.enum.filter((v) => v === null || ["string", "number", "boolean"].includes(typeof v)) };
  const alts = (s.anyOf ?? s.oneOf) as unknown;
  if (Array.isArray(alts)) return withDefs({ oneOf: alts.map(convert) }, s);
  let types: string[] = Array.isArray(s.type) ? s.type.map(String) : typeof s.type === "string" ? [s.type] : [];
  if (types.length === 0) {
    if (isObj(s.properties)) types = ["object"];
    else if (s.items !== undefined) types = ["array"];
    else return ANY;
  }
  if (s.nullable === true && !types.includes("null")) types.push("null");
  if (types.length === 1) return convertTyped(types[0], s);
  if (types.every((t) => PRIMITIVES.includes(t)) && !types.includes("string")) return { type: types };
  return { oneOf: types.map((t) => convertTyped(t, s)) };
}

/** JSON Schema -> node-llama-cpp grammar schema. */
export function toGbnfSchema(schema: unknown): GbnfJsonSchema {
  return convert(schema) as GbnfJsonSchema;
}

// node-llama-cpp's number rules allow 16-digit exponents: "1e+9999999999999999" is valid JSON
// syntax but parses to Infinity, and an "integer" like that fails every validator. Integers get
// no exponent and at most 15 digits (always a safe integer); other numbers a 2-digit exponent.
const NUMBER_RULES: [RegExp, string][] = [
  [/^integer-number-rule ::= .*$/m, 'integer-number-rule ::= "-"? ("0" | [1-9] [0-9]{0,14})'],
  [/^fractional-number-rule ::= .*$/m, 'fractional-number-rule ::= "-"? ("0" | [1-9] [0-9]{0,14}) ("." [0-9]{1,16})? ([eE] [-+]? [0-9]{1,2})?'],
];

async function createGrammar(llama: Llama, schema: GbnfJsonSchema): Promise<LlamaGrammar> {
  const g = await llama.createGrammarForJsonSchema(schema as never);
  if (!NUMBER_RULES.some(([re]) => re.test(g.grammar))) return g;
  const text = NUMBER_RULES.reduce((t, [re, rule]) => t.replace(re, rule), g.grammar);
  return new LlamaGrammar(llama, { grammar: text, stopGenerationTriggers: g.stopGenerationTriggers, trimWhitespaceSuffix: g.trimWhitespaceSuffix });
}

/** Grammars compile natively; the same schema comes back on every call of an agent's loop. */
export class GrammarCache {
  private cache = new Map<string, Promise<LlamaGrammar>>();
  constructor(private readonly llama: Llama, private readonly max = 64) {}

  get(schema: GbnfJsonSchema): Promise<LlamaGrammar> {
    const key = JSON.stringify(schema);
    let g = this.cache.get(key);
    if (g) {
      this.cache.delete(key); // refresh recency
    } else {
      g = createGrammar(this.llama, schema);
      g.catch(() => this.cache.delete(key));
      if (this.cache.size >= this.max) this.cache.delete(this.cache.keys().next().value!);
    }
    this.cache.set(key, g);
    return g;
  }
}

// Maps a client's JSON Schema (tool parameters, response_format) onto the subset node-llama-cpp
// turns into a grammar (types, properties, items, enum/const, minLength/maxLength, min/maxItems).
// For the grammars svc builds itself (forced tool calls, response_format), what node-llama-cpp
// lacks is added as GBNF rules of our own: minimum/maximum (and exclusive) for integers and
// numbers (gbnf-ranges.ts) and `pattern` (regex-gbnf.ts), and a string with no maxLength is
// capped so that the whole value fits the request's token budget (else a model that never
// closes the quote runs to max_tokens inside it). Constraints still out of reach (a pattern
// with lookaround, formats other than date/time, …) are dropped: the output keeps its shape.
import { type GbnfJsonSchema, type Llama, LlamaGrammar } from "node-llama-cpp";
import { boundedIntegerRule, boundedNumberRule, boundsOf } from "./gbnf-ranges";
import { patternRule, UnsupportedPattern } from "./regex-gbnf";
import { inferenceError } from "./errors";

type Json = Record<string, unknown>;
const isObj = (v: unknown): v is Json => typeof v === "object" && v !== null && !Array.isArray(v);
const PRIMITIVES = ["string", "number", "integer", "boolean", "null"];

/** Any JSON value (node-llama-cpp has no "any" keyword; these alternatives cover it). */
const ANY: Json = {
  oneOf: [{ type: ["string", "number", "boolean", "null"] }, { type: "object", additionalProperties: true }, { type: "array" }],
};

/** Hooks for grammars svc completes itself: a GBNF rule standing for a value, and strings to cap. */
interface Custom {
  /** `body(cap)` gives the GBNF of a whole JSON value; `capped`: it repeats up to the string cap */
  rule(body: (cap: number) => string, capped: boolean): Json;
  /** a string schema with no maxLength (its maxLength is set once the cap is known) */
  free(node: Json): void;
  /** a string with a maxLength: counted in what the fixed part of the value may take */
  bounded(maxLength: number): void;
}

function convertDefs(defs: unknown, c?: Custom): Json | undefined {
  if (!isObj(defs)) return undefined;
  return Object.fromEntries(Object.entries(defs).map(([k, v]) => [k, convert(v, c)]));
}

function withDefs(out: Json, s: Json, c?: Custom): Json {
  const defs = convertDefs(s.$defs ?? s.definitions, c);
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

function noneAllowed(what: string): never {
  throw inferenceError("invalid_request", `a JSON Schema in the request allows no ${what} (its minimum/maximum exclude every value)`);
}

function convertTyped(type: string, s: Json, c?: Custom): Json {
  const d = typeof s.description === "string" ? { description: s.description } : {};
  switch (type) {
    case "object": {
      const props = isObj(s.properties) ? s.properties : {};
      const entries = Object.entries(props);
      const out: Json = { type: "object", ...d, properties: Object.fromEntries(entries.map(([k, v]) => [k, convert(v, c)])) };
      // A bare {type: object} is a free-form object; declared properties alone are the shape.
      if (s.additionalProperties === true || (s.additionalProperties === undefined && entries.length === 0)) out.additionalProperties = true;
      else if (isObj(s.additionalProperties)) out.additionalProperties = convert(s.additionalProperties, c);
      for (const k of ["minProperties", "maxProperties"]) if (typeof s[k] === "number") out[k] = s[k];
      return withDefs(out, s, c);
    }
    case "array": {
      const out: Json = { type: "array", ...d };
      if (Array.isArray(s.items)) out.prefixItems = s.items.map((x) => convert(x, c));
      else if (s.items !== undefined) out.items = convert(s.items, c);
      if (Array.isArray(s.prefixItems)) out.prefixItems = s.prefixItems.map((x) => convert(x, c));
      for (const k of ["minItems", "maxItems"]) if (typeof s[k] === "number") out[k] = s[k];
      return withDefs(out, s, c);
    }
    case "string": {
      if (s.format === "date-time" || s.format === "date" || s.format === "time") return { type: "string", format: s.format, ...d };
      if (c && typeof s.pattern === "string") {
        const pattern = s.pattern;
        try {
          patternRule(pattern, 1); // supported?
          return c.rule((cap) => patternRule(pattern, cap), true);
        } catch (e) {
          if (!(e instanceof UnsupportedPattern)) throw e; // else: the pattern is dropped
        }
      }
      const out: Json = { type: "string", ...d };
      for (const k of ["minLength", "maxLength"]) if (typeof s[k] === "number") out[k] = s[k];
      if (c && out.maxLength === undefined) c.free(out);
      else if (c) c.bounded(out.maxLength as number);
      return out;
    }
    case "integer":
    case "number": {
      if (!c || !boundsOf(s)) return { type, ...d };
      const rule = type === "integer" ? boundedIntegerRule(s) : boundedNumberRule(s);
      if (rule === null) noneAllowed(type === "integer" ? "integer" : "number");
      return c.rule(() => rule, false);
    }
    default:
      return { type, ...d };
  }
}

export function convert(schema: unknown, c?: Custom): Json {
  if (!isObj(schema)) return ANY; // `true`, missing, or not a schema
  let s = schema;
  if (Array.isArray(s.allOf)) s = mergeAllOf(s);
  if (typeof s.$ref === "string") {
    const m = /^#\/(?:\$defs|definitions)\/(.+)$/.exec(s.$ref);
    return m ? withDefs({ $ref: `#/$defs/${m[1]}` }, s, c) : ANY;
  }
  if ("const" in s) return { const: s.const as never };
  if (Array.isArray(s.enum)) return { enum: s.enum.filter((v) => v === null || ["string", "number", "boolean"].includes(typeof v)) };
  const alts = (s.anyOf ?? s.oneOf) as unknown;
  if (Array.isArray(alts)) return withDefs({ oneOf: alts.map((x) => convert(x, c)) }, s, c);
  let types: string[] = Array.isArray(s.type) ? s.type.map(String) : typeof s.type === "string" ? [s.type] : [];
  if (types.length === 0) {
    if (isObj(s.properties)) types = ["object"];
    else if (s.items !== undefined) types = ["array"];
    else return ANY;
  }
  if (s.nullable === true && !types.includes("null")) types.push("null");
  if (types.length === 1) return convertTyped(types[0], s, c);
  const simple = !types.includes("string") && !(c && boundsOf(s));
  if (types.every((t) => PRIMITIVES.includes(t)) && simple) return { type: types };
  return { oneOf: types.map((t) => convertTyped(t, s, c)) };
}

/** JSON Schema -> node-llama-cpp grammar schema (for node-llama-cpp's own function calling,
 * which builds its grammar itself: only what node-llama-cpp expresses is kept). */
export function toGbnfSchema(schema: unknown): GbnfJsonSchema {
  return convert(schema) as GbnfJsonSchema;
}

/** A grammar svc builds: node-llama-cpp's schema with placeholder consts, and the GBNF rules the
 * placeholders stand for. */
export interface GrammarSpec {
  schema: GbnfJsonSchema;
  rules: Record<string, string>;
}

const placeholder = (i: number) => `@@svc-rule-${i}@@`;
const ruleName = (i: number) => `svc-rule-${i}`;

/** Shortest cap on a string without maxLength, even when the token budget is smaller. */
const MIN_STRING_CAP = 8;
const MAX_STRING_CAP = 16_384;

/**
 * JSON Schema -> grammar spec. `tokenBudget` is the generation's max tokens: strings without
 * maxLength (and unbounded repetition in patterns) share it, counting one character a token (the
 * worst case), after what the rest of the value needs, so a value always completes in budget.
 */
export function grammarSpec(schema: unknown, tokenBudget: number): GrammarSpec {
  const bodies: Array<(cap: number) => string> = [];
  const free: Json[] = [];
  let capped = 0;
  let boundedChars = 0;
  const custom: Custom = {
    rule(body, usesCap) {
      bodies.push(body);
      if (usesCap) capped++;
      return { const: placeholder(bodies.length - 1) };
    },
    free: (node) => void free.push(node),
    bounded: (n) => void (boundedChars += n),
  };
  const out = convert(schema, custom);
  // what the rest of the value may take: its names and punctuation (fewer characters than the
  // schema's own text) and the bounded strings
  const fixed = JSON.stringify(out).length + boundedChars;
  const share = Math.floor((tokenBudget - fixed) / Math.max(1, free.length + capped));
  const cap = Math.min(MAX_STRING_CAP, Math.max(MIN_STRING_CAP, share));
  for (const n of free) n.maxLength = Math.max(cap, typeof n.minLength === "number" ? n.minLength : 0);
  return { schema: out as GbnfJsonSchema, rules: Object.fromEntries(bodies.map((b, i) => [placeholder(i), b(cap)])) };
}

// node-llama-cpp's number rules allow 16-digit exponents: "1e+9999999999999999" is valid JSON
// syntax but parses to Infinity, and an "integer" like that fails every validator. Integers get
// no exponent and at most 15 digits (always a safe integer); other numbers a 2-digit exponent.
const NUMBER_RULES: [RegExp, string][] = [
  [/^integer-number-rule ::= .*$/m, 'integer-number-rule ::= "-"? ("0" | [1-9] [0-9]{0,14})'],
  [/^fractional-number-rule ::= .*$/m, 'fractional-number-rule ::= "-"? ("0" | [1-9] [0-9]{0,14}) ("." [0-9]{1,16})? ([eE] [-+]? [0-9]{1,2})?'],
];

async function createGrammar(llama: Llama, spec: GrammarSpec): Promise<LlamaGrammar> {
  const g = await llama.createGrammarForJsonSchema(spec.schema as never);
  let text = NUMBER_RULES.reduce((t, [re, rule]) => t.replace(re, rule), g.grammar);
  // each placeholder const is written as the JSON string literal "\"@@svc-rule-N@@\""
  const extra = Object.entries(spec.rules).map(([ph, body], i) => {
    text = text.split(`"\\"${ph}\\""`).join(ruleName(i));
    return `${ruleName(i)} ::= ${body}`;
  });
  if (text === g.grammar && !extra.length) return g;
  if (extra.length) text += `\n${extra.join("\n")}\n`;
  return new LlamaGrammar(llama, { grammar: text, stopGenerationTriggers: g.stopGenerationTriggers, trimWhitespaceSuffix: g.trimWhitespaceSuffix });
}

/** Grammars compile natively; the same schema comes back on every call of an agent's loop. */
export class GrammarCache {
  private cache = new Map<string, Promise<LlamaGrammar>>();
  constructor(private readonly llama: Llama, private readonly max = 64) {}

  get(spec: GrammarSpec): Promise<LlamaGrammar> {
    const key = JSON.stringify(spec);
    let g = this.cache.get(key);
    if (g) {
      this.cache.delete(key); // refresh recency
    } else {
      g = createGrammar(this.llama, spec);
      g.catch(() => this.cache.delete(key));
      if (this.cache.size >= this.max) this.cache.delete(this.cache.keys().next().value!);
    }
    this.cache.set(key, g);
    return g;
  }
}

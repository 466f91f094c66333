// Request bodies checked against the TypeBox schema the OpenAPI document shows for the route: one
// source. A route makes its reader once, `jsonBody("post", "/path", Schema)`; the reader parses the
// body (api/body.ts) and validates it with ajv, the first problem becoming 400 invalid_request
// whose `param` is the field's path (`messages[0].role`). A schema node may carry `errorMessage`
// (a string, or one per ajv keyword) for a problem anywhere inside it: the error is then reported
// at that node with that text (`{field}`: its path; `{value}`: what was sent). What a schema
// cannot say (cross-field rules, lookups) stays as code in the route, after this check. The
// registry lets a test compare each route's schema with the catalogue's (api/openapi/catalogue.ts)
// by identity.
import Ajv, { type ErrorObject, type ValidateFunction } from "ajv";
import addFormats from "ajv-formats";
import type { Static, TSchema } from "@sinclair/typebox";
import type { HttpContext } from "./http-context";
import { invalidRequest } from "../engines/errors";
import { readJson } from "./body";

type Method = "post" | "patch" | "put" | "delete";

/** `METHOD path` -> the schema its route validates with (filled as route modules load). */
const registry = new Map<string, TSchema>();
export const bodySchemaOf = (method: string, path: string): TSchema | undefined => registry.get(`${method.toUpperCase()} ${path}`);
export const registeredBodies = (): string[] => [...registry.keys()];

let ajv: Ajv | undefined;
const compiled = new WeakMap<TSchema, ValidateFunction>();

function validatorOf(schema: TSchema): ValidateFunction {
  let v = compiled.get(schema);
  if (!v) {
    // strict off: `description`, `errorMessage` are annotations; no defaults or coercion: the
    // route sees what the client sent
    ajv ??= addFormats(new Ajv({ allErrors: false, strict: false, verbose: true })); // verbose: the value for {value}
    v = ajv.compile(schema);
    compiled.set(schema, v);
  }
  return v;
}

/** Record that the route `method path` validates its body with `schema`, and return its reader. */
export function jsonBody<S extends TSchema>(method: Method, path: string, schema: S): (ctx: HttpContext) => Promise<Static<S>> {
  registry.set(`${method.toUpperCase()} ${path}`, schema);
  const check = (body: unknown) => checkBody(schema, body);
  return (ctx) => readJson<Static<S>>(ctx, undefined, check);
}

/** Record a route whose body an engine validates with `schema` itself (the key routes: the key
 * administration checks who may act before it looks at the body). */
export function bodyCheckedBy<S extends TSchema>(method: Method, path: string, schema: S): (ctx: HttpContext) => Promise<unknown> {
  registry.set(`${method.toUpperCase()} ${path}`, schema);
  return (ctx) => readJson(ctx);
}

/** Validate `value` against `schema`; throw 400 invalid_request naming the first problem. */
export function checkBody(schema: TSchema, value: unknown): void {
  const v = validatorOf(schema);
  if (v(value)) return;
  const { param, message } = describe(schema, v.errors ?? []);
  throw invalidRequest(message, param);
}

const pointer = (p: string): string[] => (p ? p.slice(1).split("/").map((s) => s.replace(/~1/g, "/").replace(/~0/g, "~")) : []);
/** ["messages", "0", "role"] -> messages[0].role */
const fieldPath = (segs: string[]): string => segs.reduce((out, s) => (/^\d+$/.test(s) ? `${out}[${s}]` : out ? `${out}.${s}` : s), "");

function describe(root: TSchema, errors: ErrorObject[]): { param: string | null; message: string } {
  // a union reports each branch, then itself: name the types it accepts when every branch failed
  // on the value's type; otherwise the branch that got furthest (the deepest problem, and one past
  // the type check) says what was meant
  const isUnion = (x: ErrorObject) => x.keyword === "anyOf" || x.keyword === "oneOf";
  const rest = errors.filter((x) => !isUnion(x));
  const rank = (x: ErrorObject) => 2 * (pointer(x.instancePath).length + (x.keyword === "required" || x.keyword === "additionalProperties" ? 1 : 0)) + (x.keyword === "type" ? 0 : 1);
  let e = rest.reduce((best, x) => (rank(x) > rank(best) ? x : best), rest[0] ?? errors[0]);
  let typeList: string | undefined;
  const union = errors.find((x) => isUnion(x) && x.instancePath === e.instancePath);
  if (union && rest.every((x) => x.keyword === "type" && x.instancePath === union.instancePath)) {
    e = union;
    typeList = [...new Set(rest.map((x) => String((x.params as { type: string }).type)))].join(" or ");
  }
  const segs = pointer(e.instancePath);
  const p = e.params as Record<string, unknown>;
  if (e.keyword === "required") segs.push(String(p.missingProperty));
  if (e.keyword === "additionalProperties") segs.push(String(p.additionalProperty));

  const custom = customMessage(root, e);
  if (custom) {
    const at = fieldPath(segs.slice(0, custom.depth));
    return { param: at || null, message: custom.text.replace(/\{field\}/g, at).replace(/\{value\}/g, () => JSON.stringify(e.data) ?? "nothing") };
  }
  const field = fieldPath(segs);
  let message = e.message ?? "is invalid";
  if (typeList) message = `must be ${typeList}`;
  if (e.keyword === "required") message = "is required";
  if (e.keyword === "additionalProperties") message = "is not a known field";
  if (e.keyword === "enum") message += `: ${(p.allowedValues as unknown[]).map((x) => JSON.stringify(x)).join(", ")}`;
  if (e.keyword === "const") message = `must be ${JSON.stringify(p.allowedValue)}`;
  return { param: field || null, message: field ? `invalid ${field}: ${message}` : `invalid body: ${message}` };
}

type Node = Record<string, any>;
const messageOf = (n: Node | undefined, keyword: string): string | undefined => {
  const m = n?.errorMessage;
  return typeof m === "string" ? m : m && typeof m === "object" ? (m[keyword] ?? m.default) : undefined;
};

/** The deepest `errorMessage` on the way from the root schema to the failing keyword, with the
 * depth of the instance path it belongs to. */
function customMessage(root: TSchema, e: ErrorObject): { text: string; depth: number } | undefined {
  const segs = pointer(e.schemaPath.replace(/^#/, ""));
  let node: Node | undefined = root;
  let depth = 0;
  let found: { text: string; depth: number } | undefined;
  const note = (n: Node | undefined, d: number) => {
    const t = messageOf(n, e.keyword);
    if (t) found = { text: t, depth: d };
  };
  note(node, 0);
  for (let i = 0; i < segs.length - 1 && node; i++) {
    const s = segs[i];
    if (s === "properties" || s === "patternProperties") {
      node = node[s]?.[segs[++i]];
      depth++;
    } else if (s === "items" || s === "additionalProperties") {
      node = node[s];
      depth++;
    } else if (s === "prefixItems") {
      node = node[s]?.[segs[++i]];
      depth++;
    } else if (s === "anyOf" || s === "oneOf" || s === "allOf") {
      node = node[s]?.[segs[++i]];
    } else break;
    note(node, depth);
  }
  // a missing property: its own schema's message, at its own path
  if (e.keyword === "required" && node) note(node.properties?.[String((e.params as Record<string, unknown>).missingProperty)], depth + 1);
  return found;
}

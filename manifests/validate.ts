// Schema validation: one ajv validator per kind, compiled once, filling defaults (nested
// ones too) into the document it checks. Errors become readable issues with JSON pointers.
import type { ErrorObject, ValidateFunction } from "ajv";
import { createHash } from "node:crypto";
import { kindSchemas, type Kind } from "../schemas";
import { AJV_OPTIONS } from "./ajv-options";
import { SecretRef } from "../schemas/common";
import { inferKeyType, missingHierarchyId } from "../schemas/kinds/api-key";
import { mediaPriceProblem } from "../schemas/kinds/currency";
import { joinPointer, splitPointer } from "./pointer";
import { URL_FIELDS, urlCredentialProblem } from "./url-credentials";

const validators = new Map<Kind, ValidateFunction>();

// The validators bin/kind-validators.mjs compiled at build time, when they were made from these
// very schemas (the digest); otherwise (a source checkout not built, a schema edited since) each
// kind is compiled here on first use.
const prebuilt = await loadPrebuilt();
// ajv itself is loaded only when something must be compiled here
const ajv = prebuilt ? undefined : await runtimeAjv();

async function runtimeAjv() {
  const [{ default: Ajv }, { default: addFormats }] = await Promise.all([import("ajv"), import("ajv-formats")]);
  const a = new Ajv(AJV_OPTIONS);
  addFormats(a);
  return a;
}

async function loadPrebuilt(): Promise<Record<string, ValidateFunction> | undefined> {
  try {
    const mod = await import(new URL("./generated/kind-validators.mjs", import.meta.url).href);
    const digest = createHash("sha256").update(JSON.stringify(kindSchemas)).digest("hex");
    return mod.SCHEMAS_DIGEST === digest ? mod : undefined;
  } catch {
    return undefined;
  }
}

function validatorFor(kind: Kind): ValidateFunction {
  let v = validators.get(kind) ?? prebuilt?.[kind];
  if (!v) {
    v = (ajv ?? compileError()).compile(kindSchemas[kind]);
    validators.set(kind, v);
  }
  return v;
}

function compileError(): never {
  throw new Error("internal: no validator for this kind was built and ajv was not loaded");
}

export interface SchemaProblem {
  /** JSON pointer of the offending value inside the document */
  path: string;
  message: string;
  /** the problem is a map key (an unknown field), not a value */
  atKey?: boolean;
}

/**
 * Validate one envelope `{apiVersion, kind, metadata, spec}` of a known kind. Mutates `doc`:
 * missing fields with schema defaults are filled in. Returns [] when valid.
 */
export function validateDocument(kind: Kind, doc: unknown): SchemaProblem[] {
  const v = validatorFor(kind);
  const spec = (doc as any)?.spec;
  // before defaults fill key_type with "user": an omitted key_type is the most specific id named
  if (kind === "ApiKey" && spec && typeof spec === "object" && spec.key_type === undefined) spec.key_type = inferKeyType(spec);
  if (!v(doc)) return describeErrors(v.errors ?? []);
  return semanticProblems(kind, doc as Record<string, any>);
}

/** Checks a JSON Schema cannot say: credentials in URLs (url-credentials.ts). */
function semanticProblems(kind: Kind, doc: Record<string, any>): SchemaProblem[] {
  const out: SchemaProblem[] = [];
  const missing = kind === "ApiKey" ? missingHierarchyId(doc.spec) : undefined;
  if (missing) out.push({ path: `/spec/${missing.field}`, message: missing.message });
  const media = kind === "Provider" ? mediaPriceProblem(doc.spec) : undefined;
  if (media) out.push(media);
  for (const f of URL_FIELDS[kind] ?? []) {
    const value = f.path.reduce<any>((o, k) => (o && typeof o === "object" ? o[k] : undefined), doc);
    const why = typeof value === "string" ? urlCredentialProblem(value, f.instead) : undefined;
    if (why) out.push({ path: f.path.reduce((p, k) => joinPointer(p, k), ""), message: why });
  }
  return out;
}

const SECRET_PATTERN = SecretRef.pattern as string;

function describeErrors(errors: ErrorObject[]): SchemaProblem[] {
  // anyOf whose branches are all constants -> one "must be one of" message.
  const enumAt = new Set<string>();
  for (const e of errors) {
    if (e.keyword === "anyOf" && Array.isArray(e.schema) && e.schema.every((b: any) => b && "const" in b)) {
      enumAt.add(e.schemaPath);
    }
  }
  const out: SchemaProblem[] = [];
  const seen = new Set<string>();
  const push = (p: SchemaProblem) => {
    const key = `${p.path}\u0000${p.message}`;
    if (seen.has(key)) return;
    seen.add(key);
    out.push(p);
  };
  for (const e of errors) {
    const path = e.instancePath;
    const last = splitPointer(path).pop();
    switch (e.keyword) {
      case "const": {
        const parent = e.schemaPath.replace(/\/\d+\/const$/, "");
        if (enumAt.has(parent)) continue;
        push({ path, message: `must be ${JSON.stringify((e.params as any).allowedValue)}` });
        break;
      }
      case "anyOf": {
        if (enumAt.has(e.schemaPath)) {
          const allowed = (e.schema as any[]).map((b) => JSON.stringify(b.const)).join(", ");
          push({ path, message: `must be one of ${allowed}${describeGot(e.data, true)}` });
        } else push({ path, message: "must match one of the allowed forms" });
        break;
      }
      case "required":
        push({ path, message: `missing required field "${(e.params as any).missingProperty}"` });
        break;
      case "additionalProperties": {
        const prop = String((e.params as any).additionalProperty);
        const known = Object.keys((e.parentSchema as any)?.properties ?? {});
        push({
          path: joinPointer(path, prop),
          atKey: true,
          message: `unknown field "${prop}"${known.length ? ` (known fields: ${known.join(", ")})` : ""}`,
        });
        break;
      }
      case "type":
        push({ path, message: `must be ${(e.params as any).type}${describeGot(e.data, false)}` });
        break;
      case "pattern": {
        const pattern = (e.params as any).pattern as string;
        if (pattern === SECRET_PATTERN) {
          push({
            path,
            message: "secrets must be references like env:NAME or file:/path/to/secret; a clear value is refused (the value is not shown)",
          });
        } else if (last === "secretHash") {
          push({
            path,
            message: 'must be "sha256:" followed by 64 hex digits, as printed by `svc keys generate`; never put the key itself in a manifest',
          });
        } else push({ path, message: `must match the pattern ${pattern}` });
        break;
      }
      case "minimum":
      case "maximum":
      case "exclusiveMinimum":
      case "exclusiveMaximum":
        push({ path, message: `${e.message}${describeGot(e.data, true)}` });
        break;
      case "format":
        push({ path, message: `must be a valid ${(e.params as any).format}` });
        break;
      case "if":
        continue; // the failing then/else branch has said what is wrong
      case "not":
        // a field a form leaves out (e.g. Model file with router): the schema's description says why
        push({ path, message: (e.parentSchema as any)?.description ?? e.message ?? "must not be set" });
        break;
      default:
        push({ path, message: e.message ?? `fails ${e.keyword}` });
    }
  }
  return out;
}

function describeGot(v: unknown, showValue: boolean): string {
  const t = v === null ? "null" : Array.isArray(v) ? "array" : typeof v;
  if (showValue && (t === "string" || t === "number" || t === "boolean")) return ` (got ${JSON.stringify(v)})`;
  return ` (got ${t})`;
}

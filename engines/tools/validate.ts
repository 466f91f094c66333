// Argument validation against a tool's inputSchema (ajv). Tools declare draft-07 or 2020-12
// schemas; the `$schema` keyword picks the dialect. A schema ajv cannot compile is the
// service's SchemaError, reported when the catalog is built, not at call time.
import Ajv, { type ErrorObject, type ValidateFunction } from "ajv";
import Ajv2020 from "ajv/dist/2020.js";
import addFormats from "ajv-formats";

let draft7: Ajv | undefined;
let draft2020: Ajv2020 | undefined;

function ajvFor(schema: Record<string, unknown>): Ajv | Ajv2020 {
  const dialect = typeof schema.$schema === "string" ? schema.$schema : "";
  if (/2020-12|2019-09/.test(dialect)) {
    if (!draft2020) {
      draft2020 = new Ajv2020({ strict: false, allErrors: false, validateFormats: true });
      addFormats(draft2020 as unknown as Ajv);
    }
    return draft2020;
  }
  if (!draft7) {
    draft7 = new Ajv({ strict: false, allErrors: false, validateFormats: true });
    addFormats(draft7);
  }
  return draft7;
}

export type Compiled = { ok: true; validate: ValidateFunction } | { ok: false; message: string };

export function compileSchema(schema: unknown): Compiled {
  if (!schema || typeof schema !== "object" || Array.isArray(schema)) return { ok: false, message: "inputSchema is not an object" };
  const s = schema as Record<string, unknown>;
  if (s.type !== undefined && s.type !== "object") return { ok: false, message: `inputSchema type is ${JSON.stringify(s.type)}, not "object"` };
  // $id would make ajv keep one global entry per id (two services may reuse an id)
  const { $id: _id, ...copy } = s;
  const ajv = ajvFor(copy);
  try {
    const validate = ajv.compile(copy);
    ajv.removeSchema(copy); // the function stays valid; the cache would grow with every refresh
    return { ok: true, validate };
  } catch (e) {
    return { ok: false, message: (e as Error).message.slice(0, 300) };
  }
}

/** The first problem with `args` as a JSON pointer under /arguments, or null. */
export function argumentProblem(validate: ValidateFunction, args: unknown): { path: string; message: string } | null {
  if (validate(args)) return null;
  const e: ErrorObject | undefined = validate.errors?.[0];
  if (!e) return { path: "/arguments", message: "arguments do not match the tool's schema" };
  let path = "/arguments" + e.instancePath;
  if (e.keyword === "required" && typeof (e.params as any).missingProperty === "string") path += "/" + (e.params as any).missingProperty;
  if (e.keyword === "additionalProperties" && typeof (e.params as any).additionalProperty === "string") path += "/" + (e.params as any).additionalProperty;
  return { path, message: `${path} ${e.message ?? "is invalid"}` };
}

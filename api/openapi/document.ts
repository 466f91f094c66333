// The OpenAPI 3.1 document of every route (api/openapi/catalogue.ts), served at /openapi.json.
// Request bodies are the TypeBox schemas of schemas/ (JSON Schema 2020-12 is OpenAPI 3.1's own).
import { readFileSync } from "node:fs";
import { routeDocs, type RouteDoc } from "./catalogue";

const VERSION: string = JSON.parse(readFileSync(new URL("../../package.json", import.meta.url), "utf8")).version;

const ErrorBody = {
  type: "object",
  required: ["error"],
  properties: {
    error: {
      type: "object",
      required: ["message", "type", "code"],
      properties: { message: { type: "string" }, type: { type: "string" }, code: { type: "string" }, param: { type: ["string", "null"] } },
    },
  },
};

/** `:id` -> `{id}` */
const oasPath = (p: string) => p.replace(/:([A-Za-z_]+)/g, "{$1}");

function operation(d: RouteDoc, method: string): Record<string, unknown> {
  const params = [...d.path.matchAll(/:([A-Za-z_]+)/g)].map((m) => ({ name: m[1], in: "path", required: true, schema: { type: "string" } }));
  const ok = d.streams
    ? { description: "JSON, or a stream (text/event-stream or NDJSON) when the body asks for one", content: { "application/json": { schema: { type: "object" } }, "text/event-stream": { schema: { type: "string" } } } }
    : { description: "success", content: { "application/json": { schema: {} } } };
  const op: Record<string, unknown> = {
    operationId: `${method}${d.path.replace(/[^A-Za-z0-9]+/g, "_")}`,
    tags: [d.tag],
    summary: d.summary,
    responses: { "200": ok, default: { description: "an error", content: { "application/json": { schema: ErrorBody } } } },
  };
  if (params.length) op.parameters = params;
  if (d.body) op.requestBody = { required: !d.bodyOptional, content: { "application/json": { schema: d.body } } };
  if (d.forwarded) op.requestBody = { required: true, description: "forwarded to the provider as sent", content: { "application/json": { schema: d.forwarded }, "multipart/form-data": { schema: d.forwarded } } };
  if (d.access === "key") op.security = [{ bearer: [] }, {}];
  if (d.access === "admin" || d.access === "loopback") op.description = "Served on loopback only" + (d.access === "loopback" ? " (or to a key with the owner scope where noted)" : "") + ".";
  return op;
}

export function openApiDocument(): Record<string, unknown> {
  const paths: Record<string, Record<string, unknown>> = {};
  for (const d of routeDocs) {
    const item = (paths[oasPath(d.path)] ??= {});
    // `all` (the MCP transport) answers GET, POST and DELETE
    for (const m of d.method === "all" ? ["get", "post", "delete"] : [d.method]) item[m] = operation(d, m);
  }
  return {
    openapi: "3.1.0",
    info: { title: "svc", version: VERSION, description: "Model gateway and local model/agent server. Errors are {error: {message, type, code, param}}." },
    servers: [{ url: "http://127.0.0.1:1337" }],
    components: { securitySchemes: { bearer: { type: "http", scheme: "bearer", description: "an sk-svc- key; on loopback optional where the Server allows it" } } },
    paths,
  };
}

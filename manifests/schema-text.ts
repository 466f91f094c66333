// `svc config schema` and GET /admin/config/schema: the bundle of every kind's JSON Schema.
import { stringify } from "yaml";
import { bundleSchema } from "../schemas";

export function schemaText(format: "yaml" | "json"): string {
  const s = bundleSchema();
  return format === "json" ? JSON.stringify(s, null, 2) + "\n" : stringify(s, { lineWidth: 0 });
}

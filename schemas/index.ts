// The registry of kinds: the one contract served by /admin/config/schema and `svc config schema`.
import { Type, type TObject } from "@sinclair/typebox";
import { Server } from "./kinds/server";
import { Provider } from "./kinds/provider";
import { Model } from "./kinds/model";
import { AccessPolicy } from "./kinds/access-policy";
import { ApiKey } from "./kinds/api-key";
import { Agent } from "./kinds/agent";
import { McpServer } from "./kinds/mcp-server";
import { MemoryConfig } from "./kinds/memory-config";
import { AlertSettings } from "./kinds/alert-settings";

export const API_VERSION = "svc/v1";

export const kindSchemas = {
  Server,
  Provider,
  Model,
  AccessPolicy,
  ApiKey,
  Agent,
  McpServer,
  MemoryConfig,
  AlertSettings,
} as const satisfies Record<string, TObject>;

export type Kind = keyof typeof kindSchemas;
export const kinds = Object.keys(kindSchemas) as Kind[];

/** Kinds of which at most one object may exist. */
export const singletonKinds: ReadonlySet<Kind> = new Set<Kind>(["Server", "MemoryConfig", "AlertSettings"]);

/** Spec fields that hold secrets or secret references: redacted in plans and exports. */
export const secretFields: Partial<Record<Kind, string[]>> = {
  ApiKey: ["/secretHash", "/webhook/secret"],
  Provider: ["/credential", "/headers"],
  McpServer: ["/envFrom", "/auth/token", "/auth/headers", "/auth/clientSecret"],
};

export function isKind(k: unknown): k is Kind {
  return typeof k === "string" && Object.prototype.hasOwnProperty.call(kindSchemas, k);
}

/** One JSON Schema document covering every kind (a oneOf on `kind`). */
export function bundleSchema() {
  return {
    $schema: "http://json-schema.org/draft-07/schema#",
    $id: "https://svc.local/schemas/svc-v1.json",
    title: "svc/v1 manifests",
    oneOf: kinds.map((k) => ({ $ref: `#/definitions/${k}` })),
    definitions: Object.fromEntries(kinds.map((k) => [k, stripId(kindSchemas[k])])),
  };
}

function stripId(s: TObject) {
  const { $id: _id, ...rest } = JSON.parse(JSON.stringify(s));
  return rest;
}

export { Type };

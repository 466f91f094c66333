import { Type, type Static } from "@sinclair/typebox";
import { envelope, SecretRef } from "../common";

export const McpServerSpec = Type.Object(
  {
    transport: Type.Union([Type.Literal("stdio"), Type.Literal("http")]),
    url: Type.Optional(Type.String({ format: "uri", description: "Complete endpoint for http services." })),
    command: Type.Optional(Type.String({ minLength: 1, description: "Executable for stdio services." })),
    args: Type.Array(Type.String(), { default: [] }),
    env: Type.Record(Type.String(), Type.String(), { default: {}, description: "Plain environment for stdio; use envFrom for secrets." }),
    envFrom: Type.Record(Type.String(), SecretRef, { default: {} }),
    auth: Type.Object(
      {
        type: Type.Union([Type.Literal("none"), Type.Literal("token"), Type.Literal("headers"), Type.Literal("oauth")], { default: "none" }),
        token: Type.Optional(SecretRef),
        headers: Type.Optional(Type.Record(Type.String(), SecretRef)),
        clientId: Type.Optional(Type.String()),
        clientSecret: Type.Optional(SecretRef),
      },
      { additionalProperties: false, default: {} },
    ),
    enabled: Type.Boolean({ default: true }),
    autoConnect: Type.Boolean({ default: true }),
    discoveryTimeoutSeconds: Type.Integer({ minimum: 1, maximum: 600, default: 30 }),
    toolCallTimeoutSeconds: Type.Integer({ minimum: 1, maximum: 3600, default: 60 }),
    exposeTools: Type.Boolean({ default: false, description: "Offer this server's tools to external callers via /mcp." }),
  },
  { additionalProperties: false },
);
export type McpServerSpec = Static<typeof McpServerSpec>;
export const McpServer = envelope("McpServer", McpServerSpec, "Connection settings of an external MCP tool service.");

import { Type, type Static } from "@sinclair/typebox";
import { envelope, SecretRef } from "../common";
import { ToolTagSchema } from "./agent";

const Tags = (what: string) =>
  Type.Array(ToolTagSchema, {
    uniqueItems: true,
    description: `Agent capabilities needed to call ${what}, instead of \`tools\` (an agent needs every one listed). See docs/agents-capabilities.md.`,
  });

/** Settings of one upstream tool, keyed by the tool's own (upstream) name. */
export const McpToolSettings = Type.Object(
  {
    enabled: Type.Boolean({ default: true, description: "false hides the tool from agents and external callers." }),
    expose: Type.Optional(
      Type.Boolean({
        description:
          "Offer the tool to external callers (/mcp/tools, /mcp/call, /mcp, svc mcp). Default: the service's exposeDefault. App-only tools are never exposed.",
      }),
    ),
    capabilities: Type.Optional(Tags("this tool (added to the service's own)")),
  },
  { additionalProperties: false },
);
export type McpToolSettings = Static<typeof McpToolSettings>;

export const McpServerSpec = Type.Object(
  {
    transport: Type.Union([Type.Literal("stdio"), Type.Literal("http")], { description: "stdio (a local command) or http (Streamable HTTP endpoint)." }),
    url: Type.Optional(Type.String({ format: "uri", description: "Complete endpoint for http services, e.g. https://host/mcp. No credentials in it (user:password@ or a query parameter such as token=, key=, sig=): use auth." })),
    command: Type.Optional(Type.String({ minLength: 1, description: "Executable for stdio services." })),
    args: Type.Array(Type.String(), { default: [] }),
    cwd: Type.Optional(Type.String({ minLength: 1, description: "Working directory of a stdio service." })),
    env: Type.Record(Type.String(), Type.String(), { default: {}, description: "Plain environment for stdio; use envFrom for secrets." }),
    envFrom: Type.Record(Type.String(), SecretRef, { default: {}, description: "Environment of a stdio service resolved from secret references." }),
    auth: Type.Object(
      {
        type: Type.Union([Type.Literal("none"), Type.Literal("token"), Type.Literal("headers"), Type.Literal("oauth")], {
          default: "none",
          description: "http services: none, token (Authorization: Bearer), headers (custom headers), oauth (grant: client_credentials, or authorization_code with a user's login by `svc mcp login`).",
        }),
        grant: Type.Optional(
          Type.Union([Type.Literal("client_credentials"), Type.Literal("authorization_code")], {
            description:
              "oauth: client_credentials (the default: clientId + clientSecret) or authorization_code (OAuth 2.1 with PKCE, discovery and dynamic client registration; a user runs `svc mcp login <name>` once, tokens are kept encrypted in the data dir and refreshed).",
          }),
        ),
        callbackPort: Type.Optional(
          Type.Integer({ minimum: 1, maximum: 65535, description: "authorization_code: fixed loopback port of the login callback (http://127.0.0.1:<port>/callback), for a pre-registered clientId. Default: any free port, registered dynamically." }),
        ),
        token: Type.Optional(SecretRef),
        headers: Type.Optional(Type.Record(Type.String(), SecretRef)),
        clientId: Type.Optional(Type.String({ minLength: 1, description: "oauth: the client id (client_credentials: required; authorization_code: a pre-registered client, else dynamic registration)." })),
        clientSecret: Type.Optional(SecretRef),
        scope: Type.Optional(Type.String({ minLength: 1 })),
        issuer: Type.Optional(Type.String({ format: "uri", description: "Authorization server the client credentials belong to (oauth)." })),
      },
      { additionalProperties: false, default: {} },
    ),
    enabled: Type.Boolean({ default: true, description: "false keeps the settings and drops the tools." }),
    autoConnect: Type.Boolean({ default: true, description: "Connect at start-up; false connects on the first call naming one of the service's tools." }),
    discoveryTimeoutSeconds: Type.Integer({ minimum: 1, maximum: 600, default: 20, description: "Connect + initialize + tools/list." }),
    toolCallTimeoutSeconds: Type.Integer({ minimum: 1, maximum: 3600, default: 45, description: "One tools/call; each progress notification restarts it." }),
    exposeDefault: Type.Union([Type.Literal("readOnly"), Type.Literal("all"), Type.Literal("none")], {
      default: "readOnly",
      description:
        "Exposure of tools without an explicit tools.<name>.expose: readOnly = tools annotated readOnlyHint: true; all = every tool; none = nothing. App-only tools are never exposed.",
    }),
    tools: Type.Record(Type.String({ minLength: 1 }), McpToolSettings, { default: {}, description: "Per-tool settings keyed by the upstream tool name." }),
    capabilities: Type.Optional(Tags("every tool of this service")),
  },
  { additionalProperties: false },
);
export type McpServerSpec = Static<typeof McpServerSpec>;
export const McpServer = envelope("McpServer", McpServerSpec, "Connection settings of an external MCP tool service.");

import { Type, type Static } from "@sinclair/typebox";
import { envelope } from "../common";

/** What an agent may do, enforced in its tool loop (docs/agents-capabilities.md): `tools` unlocks
 * the MCP services' untagged tools; each other capability unlocks the tools tagged with it. */
export const TOOL_TAGS = ["memory", "files", "web", "screen", "browser", "channel-write"] as const;
export type ToolTag = (typeof TOOL_TAGS)[number];

export const ToolTagSchema = Type.Union(TOOL_TAGS.map((t) => Type.Literal(t)), {
  description: "An agent capability a tool needs: memory, files, web, screen, browser or channel-write.",
});

export const Capability = Type.Union([Type.Literal("tools"), ...TOOL_TAGS.map((t) => Type.Literal(t))], {
  description: "tools: call the MCP services' untagged tools; memory, files, web, screen, browser, channel-write: call the tools an McpServer tags with it.",
});

export const ToolMode = Type.Union([Type.Literal("auto"), Type.Literal("ask"), Type.Literal("deny")], {
  description: "auto: run when the model calls it; ask: wait for an approval; deny: refuse (the model is told).",
});
export type ToolMode = Static<typeof ToolMode>;

export const AgentSpec = Type.Object(
  {
    displayName: Type.Optional(Type.String({ maxLength: 200 })),
    description: Type.Optional(Type.String({ maxLength: 2000 })),
    instructions: Type.String({ default: "", maxLength: 100000, description: "System prompt of every run." }),
    defaultModel: Type.Optional(
      Type.String({ minLength: 1, description: "Model name as routed by the gateway: a local Model or any Provider model. The agent is Ready only when it resolves." }),
    ),
    capabilities: Type.Array(Capability, { default: [], uniqueItems: true }),
    toolPolicy: Type.Object(
      {
        allow: Type.Array(Type.String({ minLength: 1 }), {
          default: [],
          description: "Catalog tool names or glob patterns (`everything_*`) offered to the model. Each plain name must exist in the catalog for the agent to be Ready.",
        }),
        deny: Type.Array(Type.String({ minLength: 1 }), { default: [], description: "Names or globs never run (deny beats everything)." }),
        requireApproval: Type.Array(Type.String({ minLength: 1 }), { default: [], description: "Names or globs with mode `ask`." }),
        tools: Type.Optional(Type.Record(Type.String({ minLength: 1 }), ToolMode, { description: "Per-tool mode by exact name or glob; deny beats ask beats auto." })),
      },
      { additionalProperties: false, default: {} },
    ),
    maxIterations: Type.Integer({ minimum: 1, maximum: 100, default: 8, description: "Iteration budget of the tool loop: model calls per run." }),
    maxOutputTokens: Type.Optional(Type.Integer({ minimum: 1, maximum: 1_000_000, description: "max_tokens of each model call (per turn)." })),
    memory: Type.Optional(Type.Boolean({ description: "Use the memory system: recall into runs, turns buffered for distillation, svc_memory_search offered (see MemoryConfig)." })),
    exposeToExternal: Type.Boolean({ default: false }),
  },
  { additionalProperties: false },
);
export type AgentSpec = Static<typeof AgentSpec>;
export const Agent = envelope("Agent", AgentSpec, "An agent: instructions, default model, capabilities, tool policy, iteration budget.");

import { Type, type Static } from "@sinclair/typebox";
import { envelope } from "../common";

export const Capability = Type.Union([
  Type.Literal("tools"),
  Type.Literal("memory"),
  Type.Literal("files"),
  Type.Literal("web"),
  Type.Literal("screen"),
  Type.Literal("browser"),
  Type.Literal("channel-write"),
]);

export const AgentSpec = Type.Object(
  {
    displayName: Type.Optional(Type.String({ maxLength: 200 })),
    description: Type.Optional(Type.String({ maxLength: 2000 })),
    instructions: Type.String({ default: "", maxLength: 100000 }),
    defaultModel: Type.Optional(Type.String({ minLength: 1 })),
    capabilities: Type.Array(Capability, { default: [], uniqueItems: true }),
    toolPolicy: Type.Object(
      {
        allow: Type.Array(Type.String({ minLength: 1 }), { default: [], description: "Tool names or `server_*` patterns." }),
        deny: Type.Array(Type.String({ minLength: 1 }), { default: [] }),
        requireApproval: Type.Array(Type.String({ minLength: 1 }), { default: [] }),
      },
      { additionalProperties: false, default: {} },
    ),
    maxIterations: Type.Integer({ minimum: 1, maximum: 100, default: 8, description: "Iteration budget of the tool loop." }),
    exposeToExternal: Type.Boolean({ default: false }),
  },
  { additionalProperties: false },
);
export type AgentSpec = Static<typeof AgentSpec>;
export const Agent = envelope("Agent", AgentSpec, "An agent: instructions, default model, capabilities, tool policy, iteration budget.");

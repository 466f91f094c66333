import { Type, type Static } from "@sinclair/typebox";
import { envelope } from "../common";

export const AlertSettingsSpec = Type.Object(
  {
    budget_threshold: Type.Array(Type.Integer({ minimum: 1, maximum: 100 }), { default: [50, 80, 100] }),
    rate_limit_percentage: Type.Integer({ minimum: 1, maximum: 100, default: 90 }),
    failed_auth_threshold: Type.Integer({ minimum: 1, default: 10, description: "Failed authentications per key prefix/IP within 5 minutes." }),
    unusual_patterns: Type.Boolean({ default: true }),
  },
  { additionalProperties: false },
);
export type AlertSettingsSpec = Static<typeof AlertSettingsSpec>;
export const AlertSettings = envelope("AlertSettings", AlertSettingsSpec, "Gateway alert settings (singleton).");

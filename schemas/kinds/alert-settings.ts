import { Type, type Static } from "@sinclair/typebox";
import { envelope, SecretRef } from "../common";

/** Where alert e-mails (budget_alerts.notify_email) are sent from (engines/notify). */
export const SmtpSettings = Type.Object(
  {
    host: Type.String({ minLength: 1, description: "SMTP server host name or address." }),
    port: Type.Integer({ minimum: 1, maximum: 65535, default: 587 }),
    tls: Type.Union([Type.Literal("starttls"), Type.Literal("implicit"), Type.Literal("none")], {
      default: "starttls",
      description: "starttls: plain connection upgraded with STARTTLS, refused if the server does not offer it (port 587); implicit: TLS from the first byte (port 465); none: no TLS (only for a relay on loopback).",
    }),
    from: Type.String({ minLength: 3, description: "Sender, e.g. \"svc alerts <alerts@example.com>\"." }),
    username: Type.Optional(Type.String({ minLength: 1 })),
    password: Type.Optional(SecretRef),
  },
  {
    additionalProperties: false,
    description: "SMTP server for alert e-mails to a key's budget_alerts.notify_email (budget thresholds, limit exceeded, suspicious activity). Without it no e-mail is sent; alerts raised meanwhile wait in the outbox.",
  },
);
export type SmtpSettings = Static<typeof SmtpSettings>;

export const AlertSettingsSpec = Type.Object(
  {
    budget_threshold: Type.Array(Type.Integer({ minimum: 1, maximum: 100 }), { default: [50, 80, 100] }),
    rate_limit_percentage: Type.Integer({ minimum: 1, maximum: 100, default: 90 }),
    failed_auth_threshold: Type.Integer({ minimum: 1, default: 10, description: "Failed authentications per key prefix/IP within 5 minutes." }),
    unusual_patterns: Type.Boolean({ default: true }),
    smtp: Type.Optional(SmtpSettings),
  },
  { additionalProperties: false },
);
export type AlertSettingsSpec = Static<typeof AlertSettingsSpec>;
export const AlertSettings = envelope("AlertSettings", AlertSettingsSpec, "Gateway alert settings (singleton).");

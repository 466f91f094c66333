// Request bodies of pairing, the secure channel and the console's sign-in: the OpenAPI document
// shows them and the routes validate with them (api/body-schema.ts). The cryptography (keys,
// nonces, signatures, challenges) is checked by the pairing engine after the shape.
import { Type } from "@sinclair/typebox";

const SCOPES = ["inference", "tools", "agents:run", "agents:dispatch", "memory", "owner"] as const;
const open = Type.Object;
const more = { additionalProperties: true } as const;

const Scopes = Type.Optional(
  Type.Union([Type.Array(Type.Union(SCOPES.map((s) => Type.Literal(s)))), Type.Null()], { description: "what the device's key may do", errorMessage: `{field} must be a list of: ${SCOPES.join(", ")}` }),
);
const Name = Type.Optional(Type.Union([Type.String({ maxLength: 100 }), Type.Null()], { description: "the device's name", errorMessage: "name must be a string of at most 100 characters" }));
const PublicKey = Type.String({ description: "the device's X25519 public key: base64url of 32 raw bytes" });
const Code = Type.Optional(Type.Union([Type.String(), Type.Integer()], { description: "the 6-digit code shown on the host" }));

export const PairBody = open(
  { nonce: Type.Optional(Type.String({ description: "from GET /pair/challenge" })), public_key: Type.Optional(PublicKey), name: Name, code: Code },
  { ...more, description: "a pairing request ({nonce, public_key, name?}) or a code ({code, public_key, name?})" },
);
export const PairHelloBody = open({ request_id: Type.String({ description: "from POST /pair", errorMessage: "request_id (from POST /pair) is required" }) }, more);
export const PairCodeBody = open(
  { code: Code, public_key: Type.Optional(PublicKey), name: Name, nonce: Type.Optional(Type.String()), scopes: Scopes },
  { ...more, description: "redeem a code ({code, public_key}), or, on the host, make one ({scopes?})" },
);
export const PairInviteBody = open(
  {
    invite: Type.Optional(Type.String({ description: "svcinv1.… from the host" })),
    public_key: Type.Optional(PublicKey),
    name: Name,
    expires_in: Type.Optional(Type.Integer({ minimum: 1, maximum: 2_592_000, errorMessage: "expires_in must be whole seconds from 1 to 2592000 (30 days)" })),
    scopes: Scopes,
    url: Type.Optional(Type.String({ description: "the address the device should use" })),
  },
  { ...more, description: "accept an invite ({invite, public_key}), or, on the host, make one" },
);
export const UnpairBody = open({ device_id: Type.Optional(Type.String({ errorMessage: "device_id must be a string" })) }, more);
export const ApproveBody = open({ scopes: Scopes }, more);

export const MAX_SESSION_TTL = 24 * 3600;
export const SecureSessionBody = open(
  {
    client_epk: Type.String({ description: "an ephemeral X25519 public key: base64url of 32 raw bytes", errorMessage: "client_epk must be an ephemeral X25519 public key: base64url of 32 raw bytes" }),
    client_nonce: Type.String({ minLength: 16, maxLength: 200, errorMessage: "client_nonce must be a random string of 16 to 200 characters" }),
    ttl_seconds: Type.Optional(Type.Integer({ minimum: 1, maximum: MAX_SESSION_TTL, errorMessage: `ttl_seconds must be whole seconds from 1 to ${MAX_SESSION_TTL}` })),
  },
  more,
);
export const SecureCallBody = open(
  {
    session_id: Type.String({ errorMessage: "session_id (from POST /secure/session) is required" }),
    seq: Type.Integer({ minimum: 1, errorMessage: "seq must be a positive integer" }),
    nonce: Type.String({ errorMessage: "nonce and ciphertext (base64url) are required" }),
    ciphertext: Type.String({ errorMessage: "nonce and ciphertext (base64url) are required" }),
  },
  more,
);

export const ConsoleSignInBody = open({ api_key: Type.String({ pattern: "\\S", description: "an sk-svc- key", errorMessage: "api_key is required" }) }, more);

// Key scopes: what an sk-svc key may be used for, as a bit set precomputed per key so the hot
// path tests one integer (no allocation). A key without `scopes` keeps the behaviour keys had
// before scopes existed: every non-owner scope. `owner` (host-level operations such as creating
// pairing invites over the network) is granted only when listed, and to the admin key.
import { SvcError } from "../errors";

export const SCOPES = ["inference", "tools", "agents:run", "agents:dispatch", "memory", "owner"] as const;
export type Scope = (typeof SCOPES)[number];

export const SCOPE_BIT: Readonly<Record<Scope, number>> = Object.freeze({
  inference: 1,
  tools: 2,
  "agents:run": 4,
  "agents:dispatch": 8,
  memory: 16,
  owner: 32,
});

export const ALL_SCOPES = 63;
/** Keys without a scopes list: everything but owner. */
export const DEFAULT_SCOPES = ALL_SCOPES & ~SCOPE_BIT.owner;

export function isScope(s: string): s is Scope {
  return (SCOPES as readonly string[]).includes(s);
}

/** Bits of a scopes list; undefined (no list) means DEFAULT_SCOPES. Unknown names grant nothing. */
export function scopeBits(scopes: readonly string[] | undefined): number {
  if (!scopes) return DEFAULT_SCOPES;
  let b = 0;
  for (const s of scopes) if (isScope(s)) b |= SCOPE_BIT[s];
  return b;
}

/** Names of the scopes in a bit set (for the API view of a key). */
export function scopeNames(bits: number): Scope[] {
  return SCOPES.filter((s) => (bits & SCOPE_BIT[s]) !== 0);
}

/** What requireScope needs of a key (engines/gateway/keys.ts KeyEntry has it). */
export interface Scoped {
  scopeBits: number;
}

export function scopeDenied(scope: Scope): SvcError {
  return new SvcError("forbidden", "permission_denied", `this key lacks the "${scope}" scope`, "scope");
}

/** Throw 403 permission_denied naming the scope when the key lacks it. A null key (anonymous
 * loopback, admitted by the server's allowUnauthenticatedLoopback) is not refused here. */
export function requireScope(key: Scoped | null | undefined, scope: Scope): void {
  if (key && (key.scopeBits & SCOPE_BIT[scope]) === 0) throw scopeDenied(scope);
}

/** Audience: omitted or "*" = any use; "agent:<name>" = only that agent's run/dispatch. A key
 * used for another agent is rejected as authentication (401 wrong_audience), per the spec's
 * "authentication rejected: wrong audience". */
export function requireAudience(key: { spec: { audience?: string } } | null | undefined, audience: string): void {
  const a = key?.spec.audience;
  if (!a || a === "*" || a === audience) return;
  throw new SvcError("unauthenticated", "wrong_audience", `this key's audience is ${JSON.stringify(a)}, not ${JSON.stringify(audience)}`);
}

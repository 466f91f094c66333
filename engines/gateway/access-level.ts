// Dashboard access levels (spec/gateway.md: Full Access, Read Only, Custom) as one pure rule.
// `full` may do whatever the key's role allows, `custom` (the default) is governed by the key's
// permissions, scopes and policies as before, and `read_only` may list models and read the usage
// and audit entries its rights show it, nothing else: no inference, no tool calls, no agents or
// memory, no writes. The enforcement points (the inference admission, routes outside the
// pipeline, key management) ask accessRefusal() and turn a reason into 403 permission_denied.

export type AccessLevel = "full" | "read_only" | "custom";
export const ACCESS_LEVELS: readonly AccessLevel[] = ["full", "read_only", "custom"];

/** What a request attempts, as the rule sees it. */
export type AccessAction =
  | "models:list"
  | "usage:read"
  | "audit:read"
  | "keys:read"
  | "keys:write"
  | "inference"
  | "route"; // agents, memory, tools, pairing: anything a key uses that is not a read above

/** The only actions a read_only key may take. */
const READ_ONLY_ALLOWED: ReadonlySet<AccessAction> = new Set<AccessAction>(["models:list", "usage:read", "audit:read"]);

const DOING: Record<AccessAction, string> = {
  "models:list": "list models",
  "usage:read": "read usage",
  "audit:read": "read audit logs",
  "keys:read": "read API keys",
  "keys:write": "create, change or revoke API keys",
  inference: "run inference",
  route: "use this route",
};

/** The part of a key the rule reads (a KeyEntry fits; the administrative key has no level). */
export interface AccessSubject {
  role?: string;
  spec: { access_level?: AccessLevel | string };
}

export function accessLevelOf(key: AccessSubject): AccessLevel {
  if (key.role === "admin") return "full";
  const l = key.spec.access_level;
  return l === "full" || l === "read_only" ? l : "custom";
}

/** null when the key's access level allows the action, else the refusal's message (it names the level). */
export function accessRefusal(key: AccessSubject | null | undefined, action: AccessAction): string | null {
  if (!key) return null; // unauthenticated loopback: governed by the Server manifest, not a key
  const level = accessLevelOf(key);
  if (level !== "read_only" || READ_ONLY_ALLOWED.has(action)) return null;
  return `this key's access level is read_only: it may list models and read usage and audit logs, not ${DOING[action]}`;
}

/** The access action of a key-management or audit route, from its audit action name. */
export function managementAccessAction(action: string): AccessAction {
  if (action === "audit_logs.list") return "audit:read";
  if (action === "keys.list" || action === "keys.get") return "keys:read";
  if (action === "usage.read") return "usage:read";
  return "keys:write";
}

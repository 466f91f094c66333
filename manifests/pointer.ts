// JSON pointers (RFC 6901) and the secret-field rules built on them.
import { secretFields, type Kind } from "../schemas";

export function escapeSeg(s: string): string {
  return s.replace(/~/g, "~0").replace(/\//g, "~1");
}

export function splitPointer(p: string): string[] {
  if (p === "" || p === "/") return [];
  return p.slice(1).split("/").map((s) => s.replace(/~1/g, "/").replace(/~0/g, "~"));
}

export function joinPointer(base: string, seg: string | number): string {
  return `${base}/${escapeSeg(String(seg))}`;
}

const SECRET_REF = /^(env:[A-Za-z_][A-Za-z0-9_]*|file:.+)$/;

/** `env:NAME` / `file:/path`: a reference to a secret, not a secret. */
export function isSecretRef(v: unknown): boolean {
  return typeof v === "string" && SECRET_REF.test(v);
}

/** True when `specPath` (a pointer inside spec) is a secret field of `kind` or lies below one. */
export function isSecretPath(kind: string, specPath: string): boolean {
  const list = secretFields[kind as Kind];
  if (!list) return false;
  for (const s of list) if (specPath === s || specPath.startsWith(s + "/")) return true;
  return false;
}

/** True when some secret field of `kind` lies strictly below `specPath`. */
export function hasSecretBelow(kind: string, specPath: string): boolean {
  const list = secretFields[kind as Kind];
  if (!list) return false;
  const prefix = specPath === "" ? "/" : specPath + "/";
  for (const s of list) if (s.startsWith(prefix)) return true;
  return false;
}

export const REDACTED = "(redacted)";

/**
 * Copy of `value` (found at `specPath` inside a spec of `kind`) with every value at or below a
 * secret field replaced by "(redacted)". Keys stay visible (header names are not secrets).
 */
export function redactAt(kind: string, specPath: string, value: unknown): unknown {
  if (value === undefined) return undefined;
  if (isSecretPath(kind, specPath)) return redactAll(value);
  if (!hasSecretBelow(kind, specPath) || value === null || typeof value !== "object") return value;
  if (Array.isArray(value)) return value.map((v, i) => redactAt(kind, joinPointer(specPath, i), v));
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(value)) out[k] = redactAt(kind, joinPointer(specPath, k), v);
  return out;
}

function redactAll(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(redactAll);
  if (value !== null && typeof value === "object") {
    const out: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(value)) out[k] = redactAll(v);
    return out;
  }
  return REDACTED;
}

// Secret references (`env:NAME`, `file:/path`) resolved at use. Environment lookups are live
// (rotation needs no restart); file contents are cached for 5 s. Every value resolved here is
// remembered by the redactor (redact.ts), so an upstream that echoes it never leaks it.
import { readFileSync } from "node:fs";
import { rememberSecret } from "./redact";

const fileCache = new Map<string, { at: number; value: string | undefined }>();
const FILE_TTL_MS = 5000;

/** The secret a reference names, or undefined when the variable/file is missing or empty. */
export function resolveSecretRef(ref: string | undefined, env: NodeJS.ProcessEnv = process.env): string | undefined {
  if (!ref) return undefined;
  if (ref.startsWith("env:")) {
    const v = env[ref.slice(4)];
    if (!v) return undefined;
    rememberSecret(v);
    return v;
  }
  if (ref.startsWith("file:")) {
    const p = ref.slice(5);
    const now = Date.now();
    const c = fileCache.get(p);
    if (c && now - c.at < FILE_TTL_MS) return c.value;
    let value: string | undefined;
    try {
      value = readFileSync(p, "utf8").trim() || undefined;
      rememberSecret(value);
    } catch {
      value = undefined;
    }
    fileCache.set(p, { at: now, value });
    return value;
  }
  return undefined;
}

/** Why a reference does not resolve (for Provider status), or null when it does. */
export function describeMissing(ref: string): string | null {
  if (resolveSecretRef(ref) !== undefined) return null;
  // svc reads its own environment once, at start: a variable set later reaches it only by a restart
  if (ref.startsWith("env:")) return `environment variable ${ref.slice(4)} is not set in svc's environment: restart svc with it set`;
  if (ref.startsWith("file:")) return `file ${ref.slice(5)} is missing, unreadable or empty`;
  return `"${ref}" is not a secret reference (env:NAME or file:/path)`;
}

export function clearSecretCache() {
  fileCache.clear();
}

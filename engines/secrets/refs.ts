// Secret references (`env:NAME`, `file:/path`) resolved at use. Environment lookups are live
// (rotation needs no restart); file contents are cached for 5 s. Every value resolved here is
// remembered by the redactor (redact.ts), so an upstream that echoes it never leaks it.
import { closeSync, constants, fstatSync, openSync, readSync } from "node:fs";
import { rememberSecret } from "./redact";

const fileCache = new Map<string, { at: number; value: string | undefined }>();
const FILE_TTL_MS = 5000;
/** Larger than any credential file (a service-account JSON is a few KB). */
const MAX_SECRET_FILE = 1024 * 1024;

/**
 * A regular file's content, read at most MAX_SECRET_FILE bytes; undefined for anything else.
 * References are also named by organization keys (a webhook's secret) and resolved while the
 * request is served: readFileSync read /dev/zero until the process aborted, and a FIFO blocked
 * the event loop for good. O_NONBLOCK makes opening a FIFO return at once (no effect on regular
 * files); the type is checked on the open descriptor, so a swapped path cannot slip past it.
 */
function readSecretFile(p: string): string | undefined {
  const fd = openSync(p, constants.O_RDONLY | (constants.O_NONBLOCK ?? 0));
  try {
    if (!fstatSync(fd).isFile()) return undefined;
    const buf = Buffer.allocUnsafe(MAX_SECRET_FILE + 1);
    let n = 0;
    for (let r = 1; r > 0 && n < buf.length; n += r) r = readSync(fd, buf, n, buf.length - n, null);
    if (n > MAX_SECRET_FILE) return undefined; // not a secret: a model or a log named by mistake
    return buf.toString("utf8", 0, n).trim() || undefined;
  } finally {
    closeSync(fd);
  }
}

/** The secret a reference names, or undefined when the variable/file is missing or empty. */
export function resolveSecretRef(ref: string | undefined, env: NodeJS.ProcessEnv = process.env): string | undefined {
  if (!ref) return undefined;
  if (ref.startsWith("env:")) {
    const name = ref.slice(4);
    // strings only: env:constructor or env:__proto__ named process.env's inherited members (a
    // function, Object.prototype), which looked configured and broke every use (the type check,
    // not Object.hasOwn: this runs for every upstream request, and a second lookup of process.env
    // costs a getenv)
    const v = env[name];
    if (typeof v !== "string" || !v) return undefined;
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
      value = readSecretFile(p);
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
  if (ref.startsWith("file:")) return `file ${ref.slice(5)} is missing, unreadable, empty, or not a regular file of at most 1 MiB`;
  return `"${ref}" is not a secret reference (env:NAME or file:/path)`;
}

export function clearSecretCache() {
  fileCache.clear();
}

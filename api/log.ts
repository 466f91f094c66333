// svc's logs: pino, one JSON object per line on stdout (human lines through pino-pretty when
// stdout is a terminal), behind the small Logger interface engines use (engines/svc.ts).
// Secrets never reach a line: values under secret-looking field names are replaced at any
// depth, anything shaped like an svc key or an Authorization credential is cut out of strings,
// and pino's own redaction covers the usual header paths as a second net.
// The per-request access line (api/request-id.ts) holds only fields built from known values
// (request id, key id, never the key): it is written in pino's line shape without pino's
// per-call work, and on stdout access lines are written in batches (bufferedStdout).
import pino, { type DestinationStream, type Logger as Pino } from "pino";
import type { Logger } from "../engines/svc";
import { isoAt } from "../engines/iso-time";
import { redactSecrets } from "../engines/secrets/redact";

export const LOG_LEVELS = ["fatal", "error", "warn", "info", "debug", "trace", "silent"] as const;
export type LogLevel = (typeof LOG_LEVELS)[number];
export type LogFormat = "json" | "pretty";

/** A level from --log-level or SVC_LOG_LEVEL; throws a message naming the accepted values. */
export function parseLogLevel(value: string, from: string): LogLevel {
  const v = value.trim().toLowerCase();
  if ((LOG_LEVELS as readonly string[]).includes(v)) return v as LogLevel;
  throw new Error(`${from} must be one of ${LOG_LEVELS.join(", ")} (got ${JSON.stringify(value)})`);
}

/** A format from SVC_LOG_FORMAT; default: pretty on a terminal, else JSON. */
export function parseLogFormat(value: string | undefined, tty: boolean): LogFormat {
  const v = value?.trim().toLowerCase();
  if (!v) return tty ? "pretty" : "json";
  if (v === "json" || v === "pretty") return v;
  throw new Error(`SVC_LOG_FORMAT must be json or pretty (got ${JSON.stringify(value)})`);
}

// ---------------------------------------------------------------------------------------------
// Redaction

const SECRET_KEY = /^(authorization|proxy-authorization|cookie|set-cookie|x-api-key|api[-_]?key|key|secret|.*secret.*|.*password.*|.*passwd.*|token|.*[-_]token|access[-_]?token|credentials?|master[-_]?key|admin[-_]?key|private[-_]?key)$/i;
const SVC_KEY = /sk-svc-[A-Za-z0-9]+/g;
// credentials written as an Authorization value: "Bearer abc…", "Basic dXNlcjpw…", "Token …"
const AUTH_VALUE = /\b(Bearer|Basic|Token)\s+[A-Za-z0-9._~+/=-]{8,}/gi;

export const REDACTED = "[redacted]";

export function redactString(s: string): string {
  if (s.includes("sk-svc-") || /bearer|basic|token/i.test(s)) s = s.replace(SVC_KEY, "sk-svc-[redacted]").replace(AUTH_VALUE, `$1 ${REDACTED}`);
  return redactSecrets(s); // every resolved secret value and other key-shaped text (engines/secrets)
}

/** A copy of `v` with secret-looking fields replaced and credentials cut out of strings. */
export function redact(v: unknown, depth = 0): unknown {
  if (typeof v === "string") return redactString(v);
  if (v === null || typeof v !== "object") return v;
  // below the depth limit nothing is inspected, so nothing is shown: returning the object as it
  // is would write its secret-looking fields in clear (the rule holds "at any depth")
  if (depth > 6) return REDACTED;
  if (v instanceof Error) return { message: redactString(v.message), name: v.name };
  if (Array.isArray(v)) return v.map((x) => redact(x, depth + 1));
  const out: Record<string, unknown> = {};
  for (const [k, x] of Object.entries(v)) {
    out[k] = SECRET_KEY.test(k) && x !== null && typeof x !== "number" && typeof x !== "boolean" ? REDACTED : redact(x, depth + 1);
  }
  return out;
}

// pino's fast-redact: paths a careless caller may log straight through the pino instance
const PINO_REDACT_PATHS = [
  "authorization",
  "headers.authorization",
  'headers["x-api-key"]',
  "headers.cookie",
  "req.headers.authorization",
  'req.headers["x-api-key"]',
  "req.headers.cookie",
  "api_key",
  "apiKey",
  "*.api_key",
  "*.apiKey",
  "token",
  "secret",
];

// ---------------------------------------------------------------------------------------------
// The logger

/** One access-log record: what a request did, never its credential. */
export interface AccessRecord {
  requestId: string;
  /** the authenticated key's id (never the secret); absent for anonymous loopback requests */
  keyId?: string;
  method: string;
  /** the matched route pattern (e.g. /v1/api-keys/:id), else the path */
  route: string;
  status: number;
  latencyMs: number;
  /** the client went away before the response was complete */
  aborted?: boolean;
  /** the request's trace id while tracing is on */
  traceId?: string;
}

export interface SvcLogger extends Logger {
  readonly pino: Pino;
  debug(msg: string, fields?: Record<string, unknown>): void;
  /** true when a line at `level` would be written (cheap: skip building fields otherwise) */
  enabled(level: "debug" | "info" | "warn" | "error"): boolean;
  /** the per-request access line (level info, msg "request") */
  access(r: AccessRecord): void;
  /** write out anything buffered (call before exiting) */
  flush(): Promise<void>;
}

export interface LoggerOptions {
  level?: LogLevel;
  format?: LogFormat;
  /** where lines go (one JSON line per call, with its newline); default stdout */
  destination?: DestinationStream;
  /** fields on every line */
  base?: Record<string, unknown>;
}

/** A logger over pino. JSON lines by default: {"level":"info","time":"…","msg":"…",…}. */
export function createLogger(opts: LoggerOptions = {}): SvcLogger {
  const format = opts.format ?? "json";
  let flush: () => Promise<void> = async () => undefined;
  let now = () => undefined as void;
  let dest = opts.destination;
  if (format === "pretty") {
    dest = prettyStream(dest);
  } else if (!dest) {
    ({ dest, flush, now } = bufferedStdout());
  }
  const p = pino(
    {
      level: opts.level ?? "info",
      base: opts.base ?? undefined,
      messageKey: "msg",
      timestamp: pino.stdTimeFunctions.isoTime,
      formatters: { level: (label: string) => ({ level: label }) },
      redact: { paths: PINO_REDACT_PATHS, censor: REDACTED },
    },
    dest,
  );
  // Access records hold only fields built from known values (AccessRecord), so their line is
  // built here, in pino's shape, and written to the same destination: pino's per-call work
  // (serializers, redaction paths, formatters) cost ~20 µs a request at one connection.
  const out = dest ?? pino.destination(1);
  const base = opts.base && Object.keys(opts.base).length ? JSON.stringify(opts.base).slice(1, -1) + "," : "";
  const emit = (level: "debug" | "info" | "warn" | "error") => (msg: string, fields?: Record<string, unknown>) => {
    if (!p.isLevelEnabled(level)) return;
    if (fields) p[level](redact(fields) as object, redactString(msg));
    else p[level](redactString(msg));
    now(); // only access lines wait in the buffer
  };
  return {
    pino: p,
    debug: emit("debug"),
    info: emit("info"),
    warn: emit("warn"),
    error: emit("error"),
    enabled: (level) => p.isLevelEnabled(level),
    access: (r) => {
      if (p.isLevelEnabled("info")) out.write(accessLine(r, base));
    },
    flush,
  };
}

/** An access record as a line in pino's shape; only the route can be a client's text. */
function accessLine(r: AccessRecord, base: string): string {
  return `{"level":"info","time":"${isoAt(Date.now())}",${base}"requestId":${JSON.stringify(r.requestId)},${r.keyId !== undefined ? `"keyId":${JSON.stringify(r.keyId)},` : ""}"method":${JSON.stringify(r.method)},"route":${JSON.stringify(r.route)},"status":${r.status},"latencyMs":${r.latencyMs}${r.aborted ? ',"aborted":true' : ""}${r.traceId ? `,"trace_id":"${r.traceId}"` : ""},"msg":"request"}\n`;
}

/** How long an access line may wait in the buffer before it is written. */
const FLUSH_MS = 200;
/** Gathered lines are written once this many bytes are waiting. */
const FLUSH_BYTES = 16 * 1024;
const SLAB_BYTES = 32 * 1024;

/** stdout through sonic-boom, with access lines gathered here and written together: when 16 KiB
 * have gathered, every FLUSH_MS, with any other line (written at once), at close and at exit. A
 * write per line cost ~0.2 ms of CPU a request at one connection (a thread-pool hop and a pipe
 * wake-up each), and sonic-boom's own buffering re-measures its whole buffer on every line; a
 * kill -9 can lose up to FLUSH_MS of access lines (the audit log is the durable record).
 * Lines are copied at once into an off-heap buffer: strings held for up to FLUSH_MS would outlive
 * V8's young generation, and every scavenge would copy them and then promote them. */
function bufferedStdout(): { dest: DestinationStream; flush: () => Promise<void>; now: () => void } {
  const sb = pino.destination({ dest: 1, sync: false, minLength: 0, contentMode: "buffer" });
  // a reader that went away (`svc serve | head`) must not take the server down with it
  sb.on("error", () => undefined);
  const out = sb as unknown as { write(b: Buffer): boolean }; // buffer mode (its types say string)
  let slab = Buffer.allocUnsafeSlow(SLAB_BYTES);
  let used = 0;
  const hand = (b: Buffer) => {
    try {
      out.write(b); // sonic-boom queues it behind a write in flight
    } catch {
      /* destroyed: nothing to write to */
    }
  };
  const now = () => {
    if (used === 0) return;
    const chunk = slab.subarray(0, used);
    slab = Buffer.allocUnsafeSlow(SLAB_BYTES); // the old one is sonic-boom's until written
    used = 0;
    hand(chunk);
  };
  const timer = setInterval(now, FLUSH_MS);
  timer.unref();
  process.once("exit", () => {
    try {
      now();
      sb.flushSync();
    } catch {
      /* a reader that went away */
    }
  });
  const dest: DestinationStream = {
    write(line: string) {
      // up to 3 bytes a UTF-16 unit: room is checked without measuring the line
      if (used + line.length * 3 > SLAB_BYTES) {
        now();
        if (line.length * 3 > SLAB_BYTES) return hand(Buffer.from(line, "utf8"));
      }
      used += slab.write(line, used);
      if (used >= FLUSH_BYTES) now();
    },
  };
  // bounded: a stalled reader must not keep a stopping server alive
  const flush = () =>
    new Promise<void>((resolve) => {
      clearInterval(timer);
      now();
      const t = setTimeout(resolve, 2000);
      t.unref();
      try {
        sb.flush(() => {
          clearTimeout(t);
          resolve();
        });
      } catch {
        clearTimeout(t);
        resolve();
      }
    });
  return { dest, flush, now };
}

let prettyFactory: ((o: object) => DestinationStream) | undefined;

/** Human lines for a terminal: "[17:48:07] INFO: listening {"url":"…"}" (colours when the
 * terminal has them and NO_COLOR is unset). */
function prettyStream(destination?: DestinationStream): DestinationStream {
  if (!prettyFactory) throw new Error("pino-pretty was not loaded: call loadPretty() first");
  return prettyFactory({ translateTime: "SYS:HH:MM:ss", ignore: "pid,hostname", singleLine: true, sync: true, ...(destination ? { destination } : {}) });
}

/** pino-pretty is only needed on a terminal: import it then (it pulls in a dozen modules). */
export async function loadPretty(): Promise<void> {
  prettyFactory ??= ((await import("pino-pretty")).default as unknown) as (o: object) => DestinationStream;
}

/** A JSON-line logger writing each line (without its newline) to `write`: tests read lines. */
export function jsonLogger(opts: { write?: (line: string) => void; base?: Record<string, unknown>; level?: LogLevel } = {}): SvcLogger {
  const write = opts.write ?? ((line: string) => void process.stderr.write(line + "\n"));
  return createLogger({ level: opts.level ?? "info", base: opts.base, destination: { write: (s: string) => write(s.endsWith("\n") ? s.slice(0, -1) : s) } });
}

/** The SvcLogger behind a Logger, when it is one (routes built on another Logger log no access lines). */
export function svcLoggerOf(log: Logger): SvcLogger | undefined {
  return typeof (log as SvcLogger).access === "function" && typeof (log as SvcLogger).enabled === "function" ? (log as SvcLogger) : undefined;
}

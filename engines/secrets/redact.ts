// The one redactor. Every value resolved through a secret reference (refs.ts: the env:/file:
// references of Providers, McpServers and webhooks) and every key svc mints is remembered here,
// and replaced wherever outside text enters svc's records: condition messages (the controller
// runtime writes every status through it), task step logs, error bodies, log lines. Upstreams and
// tool services echo credentials ("Incorrect API key provided: Bearer …", a stdio service printing
// its environment on stderr), so anything shaped like a key (sk-…, Bearer/Basic/Token
// credentials) is masked too.
//
// Text that arrives in pieces (a child's stderr) is kept whole until read and read through
// redactTail, which also masks the start or end of a secret cut by a buffer boundary: a secret
// split across chunks is never shown, not even in part.

const MASK = "[redacted]";
/** Values shorter than this are not searched for (they would blank ordinary words). */
const MIN_SECRET = 6;
/** The shortest piece of a secret, at the edge of a cut buffer, that is masked. */
const MIN_EDGE = 4;
/** Remembered values: every resolution of every reference, old values included (an upstream may
 * echo a credential that was rotated a moment ago). Bounded: the oldest go first. */
const MAX_REMEMBERED = 1024;

const known = new Set<string>();
let ordered: string[] | null = null; // longest first, rebuilt on change

function sorted(): string[] {
  return (ordered ??= [...known].sort((a, b) => b.length - a.length));
}

/** Remember a secret value so it is redacted from anything that leaves svc. */
export function rememberSecret(value: string | undefined): void {
  if (!value || value.length < MIN_SECRET || known.has(value)) return;
  if (known.size >= MAX_REMEMBERED) known.delete(known.values().next().value as string);
  known.add(value);
  ordered = null;
}

const KEY_SHAPES: Array<[RegExp, string]> = [
  // Authorization-style credentials: keep the scheme, drop the value ("Basic"/"Token" only before
  // a credential-length value, so prose such as "Token indices exceed …" stays readable)
  [/\b(Bearer)(\s+)[A-Za-z0-9._~+/=:-]{6,}/gi, `$1$2${MASK}`],
  [/\b(Basic|Token)(\s+)[A-Za-z0-9._~+/=:-]{16,}/gi, `$1$2${MASK}`],
  // OpenAI / Anthropic / svc style keys (sk-…, sk-ant-…, sk-proj-…, sk-svc-…)
  [/\bsk-[A-Za-z0-9_-]{6,}/g, `sk-${MASK}`],
  // x-api-key: value / api_key=value written out in a message
  [/\b(x-api-key|api[-_]?key)(["']?\s*[:=]\s*["']?)[^\s"',;]{6,}/gi, `$1$2${MASK}`],
];

/** The text with every remembered secret and every key-shaped value replaced. */
export function redactSecrets(text: string): string {
  if (!text) return text;
  let out = text;
  if (known.size) for (const s of sorted()) if (out.includes(s)) out = out.split(s).join(MASK);
  for (const [re, to] of KEY_SHAPES) out = out.replace(re, to);
  return out;
}

/**
 * redactSecrets for a piece cut out of a longer stream (the last lines of a child's stderr):
 * also masks a leading end of a secret and a trailing start of one (MIN_EDGE characters or
 * more), which a cut or a write not finished yet may have left.
 */
export function redactTail(text: string): string {
  let out = redactSecrets(text);
  if (!known.size || !out) return out;
  for (const s of sorted()) {
    for (let n = Math.min(s.length - 1, out.length); n >= MIN_EDGE; n--) {
      if (out.endsWith(s.slice(0, n))) {
        out = out.slice(0, out.length - n) + MASK;
        break;
      }
    }
    for (let n = Math.min(s.length - 1, out.length); n >= MIN_EDGE; n--) {
      if (out.startsWith(s.slice(s.length - n))) {
        out = MASK + out.slice(n);
        break;
      }
    }
  }
  return out;
}

/** Forget every remembered value (tests). */
export function forgetSecrets(): void {
  known.clear();
  ordered = null;
}

// GBNF rules for JSON numbers within bounds (JSON Schema minimum / maximum / exclusive*), which
// node-llama-cpp's JSON-schema grammar does not express. Integers: an exact digit-range grammar
// (no leading zeros, at most 15 digits, so always a safe integer). Other numbers: integers in
// range, plus fractions on integer parts where every fraction stays in range; a subset of the
// allowed values, never a value outside them.

const MAX_ABS = 999_999_999_999_999; // 15 digits, as the server's unbounded integer rule

const digits = (n: number) => String(n).length;
const anyDigits = (n: number) => (n === 0 ? "" : n === 1 ? "[0-9]" : `[0-9]{${n}}`);
const seq = (...parts: string[]) => parts.filter(Boolean).join(" ");

/** Alternatives matching the digit strings from a to b, both of the same length (a <= b). */
function sameLength(a: string, b: string): string[] {
  if (a.length === 0) return [""];
  if (a === b) return [`"${a}"`];
  const rest = a.length - 1;
  if (a[0] === b[0]) return sameLength(a.slice(1), b.slice(1)).map((s) => seq(`"${a[0]}"`, s));
  const zeros = "0".repeat(rest);
  const nines = "9".repeat(rest);
  const out: string[] = [];
  let from = Number(a[0]);
  let to = Number(b[0]);
  if (a.slice(1) !== zeros) {
    out.push(...sameLength(a.slice(1), nines).map((s) => seq(`"${a[0]}"`, s)));
    from++;
  }
  const lastWhole = b.slice(1) === nines;
  if (!lastWhole) to--;
  if (from <= to) out.push(seq(from === to ? `"${from}"` : `[${from}-${to}]`, anyDigits(rest)));
  if (!lastWhole) out.push(...sameLength(zeros, b.slice(1)).map((s) => seq(`"${b[0]}"`, s)));
  return out;
}

/** Alternatives for the non-negative integers lo..hi written without leading zeros. */
function unsignedRange(lo: number, hi: number): string[] {
  const out: string[] = [];
  for (let d = digits(lo); d <= digits(hi); d++) {
    const a = Math.max(lo, d === 1 ? 0 : 10 ** (d - 1));
    const b = Math.min(hi, 10 ** d - 1);
    if (a <= b) out.push(...sameLength(String(a), String(b)));
  }
  return out;
}

const alt = (xs: string[]) => (xs.length === 1 ? xs[0] : `( ${xs.map((x) => (x.includes(" ") ? `(${x})` : x)).join(" | ")} )`);

/** GBNF for the integers lo..hi (inclusive; both within ±15 digits). */
export function integerRangeRule(lo: number, hi: number): string {
  const parts: string[] = [];
  if (lo < 0) parts.push(seq('"-"', alt(unsignedRange(Math.max(1, hi < 0 ? -hi : 1), -lo))));
  if (hi >= 0) parts.push(alt(unsignedRange(Math.max(0, lo), hi)));
  return alt(parts);
}

export interface Bounds {
  minimum?: unknown;
  maximum?: unknown;
  exclusiveMinimum?: unknown;
  exclusiveMaximum?: unknown;
}

const num = (v: unknown) => (typeof v === "number" && Number.isFinite(v) ? v : undefined);

/** The bounds a schema sets (draft 4 boolean exclusives and draft 6+ numeric ones), or null. */
export function boundsOf(s: Bounds): { lo?: number; loExcl: boolean; hi?: number; hiExcl: boolean } | null {
  let lo = num(s.minimum);
  let hi = num(s.maximum);
  let loExcl = s.exclusiveMinimum === true;
  let hiExcl = s.exclusiveMaximum === true;
  const xlo = num(s.exclusiveMinimum);
  const xhi = num(s.exclusiveMaximum);
  if (xlo !== undefined && (lo === undefined || xlo >= lo)) [lo, loExcl] = [xlo, true];
  if (xhi !== undefined && (hi === undefined || xhi <= hi)) [hi, hiExcl] = [xhi, true];
  if (lo === undefined && hi === undefined) return null;
  return { lo, loExcl, hi, hiExcl };
}

/** The integer interval within bounds, clamped to ±15 digits; null when it is empty. */
function integerInterval(b: NonNullable<ReturnType<typeof boundsOf>>): [number, number] | null {
  let lo = b.lo === undefined ? -MAX_ABS : Math.ceil(b.lo);
  if (b.lo !== undefined && b.loExcl && lo === b.lo) lo++;
  let hi = b.hi === undefined ? MAX_ABS : Math.floor(b.hi);
  if (b.hi !== undefined && b.hiExcl && hi === b.hi) hi--;
  lo = Math.max(lo, -MAX_ABS);
  hi = Math.min(hi, MAX_ABS);
  return lo <= hi ? [lo, hi] : null;
}

/** GBNF for an integer within the schema's bounds; null when no integer satisfies them. */
export function boundedIntegerRule(s: Bounds): string | null {
  const b = boundsOf(s);
  const r = b && integerInterval(b);
  return r ? integerRangeRule(r[0], r[1]) : null;
}

/** GBNF for a number within the schema's bounds; null when the grammar cannot express one. */
export function boundedNumberRule(s: Bounds): string | null {
  const b = boundsOf(s);
  if (!b) return null;
  const r = integerInterval(b);
  if (!r) {
    // no integer inside (e.g. 0.2..0.8): the midpoint, written out, is in range
    if (b.lo === undefined || b.hi === undefined) return null;
    const mid = (b.lo + b.hi) / 2;
    return mid > b.lo && mid < b.hi ? `"${JSON.stringify(mid)}"` : null;
  }
  const [lo, hi] = r;
  // k.fff lies in [k, k+1): allowed for non-negative k with k+1 <= hi (and k >= lo)
  const fracLo = Math.max(lo, 0);
  const fracHi = hi - 1;
  if (fracLo > fracHi) return integerRangeRule(lo, hi);
  return `( ${integerRangeRule(lo, hi)} | ${integerRangeRule(fracLo, fracHi)} "." [0-9]{1,6} )`;
}

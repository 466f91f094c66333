// JSON Schema `pattern` -> GBNF for the JSON string value (quotes included). Covers the regular
// subset schemas use: literals and escapes, classes ([a-z], [^...], \d \w \s), `.`, groups,
// alternation, and quantifiers (* + ? {n} {n,} {n,m}). The grammar generates a subset of what the
// pattern matches, written as valid JSON: `"`, `\` and control characters are left out of classes
// and `.`, and literal ones are written escaped. Unbounded repetition is capped at `cap` so that
// a string always ends. Anything else (lookaround, backreferences, \b) throws Unsupported, and
// the caller drops the pattern.

export class UnsupportedPattern extends Error {}

const EXCLUDED = '\\u0022\\u005C\\x00-\\x1F\\x7F'; // " \ and control characters
const cls = (inner: string) => `[${inner}]`;
const DOT = cls(`^${EXCLUDED}`);
const code = (c: string) => {
  const n = c.codePointAt(0)!;
  if (/[0-9A-Za-z]/.test(c)) return c;
  return n <= 0xffff ? `\\u${n.toString(16).padStart(4, "0")}` : `\\U${n.toString(16).padStart(8, "0")}`;
};

/** One character as it appears inside a JSON string, as a GBNF literal. */
function jsonChar(c: string): string {
  const text = JSON.stringify(c).slice(1, -1); // the JSON escape, e.g. \" or \n
  return `"${text.replace(/\\/g, "\\\\").replace(/"/g, '\\"')}"`;
}

type Range = [string, string];
const SHORTHAND: Record<string, Range[]> = { d: [["0", "9"]], w: [["0", "9"], ["A", "Z"], ["a", "z"], ["_", "_"]], s: [[" ", " "]] };
const NEGATED: Record<string, string> = { D: "0-9", W: "0-9A-Za-z_", S: "\\u0020\\t\\n\\r\\f\\v" };

class Parser {
  private i = 0;
  constructor(private readonly src: string, private readonly cap: number) {}

  parse(): string {
    const body = this.alternation();
    if (this.i < this.src.length) throw new UnsupportedPattern(`unexpected '${this.src[this.i]}'`);
    return `"\\"" ${body} "\\""`;
  }

  private peek() {
    return this.src[this.i];
  }

  private alternation(): string {
    const alts = [this.sequence()];
    while (this.peek() === "|") {
      this.i++;
      alts.push(this.sequence());
    }
    return alts.length === 1 ? alts[0] : `( ${alts.map((a) => a || '""').join(" | ")} )`;
  }

  private sequence(): string {
    const parts: string[] = [];
    while (this.i < this.src.length && this.peek() !== "|" && this.peek() !== ")") {
      const atom = this.atom();
      parts.push(this.quantified(atom));
    }
    return parts.join(" ");
  }

  private quantified(atom: string): string {
    const c = this.peek();
    let q: string | undefined;
    if (c === "*") q = `{0,${this.cap}}`;
    else if (c === "+") q = `{1,${this.cap}}`;
    else if (c === "?") q = "?";
    else if (c === "{") {
      const m = /^\{(\d+)(,(\d*))?\}/.exec(this.src.slice(this.i));
      if (!m) throw new UnsupportedPattern("bad {} quantifier");
      const n = Number(m[1]);
      const max = m[2] === undefined ? n : m[3] === "" ? Math.max(n, this.cap) : Number(m[3]);
      q = n === max ? `{${n}}` : `{${n},${max}}`;
      this.i += m[0].length - 1;
    }
    if (q === undefined) return atom;
    this.i++;
    if (this.peek() === "?" || this.peek() === "+") this.i++; // lazy / possessive: same language
    return `(${atom})${q}`;
  }

  private atom(): string {
    const c = this.src[this.i++];
    switch (c) {
      case "(": {
        if (this.peek() === "?") {
          if (this.src[this.i + 1] === ":") this.i += 2;
          else if (this.src[this.i + 1] === "<" && /[A-Za-z]/.test(this.src[this.i + 2] ?? "")) this.i = this.src.indexOf(">", this.i) + 1;
          else throw new UnsupportedPattern("lookaround");
        }
        const inner = this.alternation();
        if (this.src[this.i++] !== ")") throw new UnsupportedPattern("unclosed group");
        return `(${inner || '""'})`;
      }
      case "[":
        return this.charClass();
      case ".":
        return DOT;
      case "\\":
        return this.escape(false) as string;
      case "^":
      case "$":
        throw new UnsupportedPattern("anchor inside the pattern");
      case ")":
      case "*":
      case "+":
      case "?":
      case "{":
        throw new UnsupportedPattern(`unexpected '${c}'`);
      default:
        return jsonChar(c);
    }
  }

  /** An escape after `\`: a GBNF atom, or (inClass) ranges / a negated set for a class. */
  private escape(inClass: boolean): string | Range[] {
    const c = this.src[this.i++];
    if (c === undefined) throw new UnsupportedPattern("trailing backslash");
    if (SHORTHAND[c]) return inClass ? SHORTHAND[c] : cls(SHORTHAND[c].map(([a, b]) => (a === b ? code(a) : `${code(a)}-${code(b)}`)).join(""));
    if (NEGATED[c]) {
      if (inClass) throw new UnsupportedPattern(`\\${c} inside a class`);
      return cls(`^${NEGATED[c]}${EXCLUDED}`);
    }
    let ch: string;
    if (c === "n") ch = "\n";
    else if (c === "t") ch = "\t";
    else if (c === "r") ch = "\r";
    else if (c === "u" && /^[0-9a-fA-F]{4}/.test(this.src.slice(this.i))) {
      ch = String.fromCharCode(parseInt(this.src.slice(this.i, this.i + 4), 16));
      this.i += 4;
    } else if (c === "x" && /^[0-9a-fA-F]{2}/.test(this.src.slice(this.i))) {
      ch = String.fromCharCode(parseInt(this.src.slice(this.i, this.i + 2), 16));
      this.i += 2;
    } else if (/[A-Za-z0-9]/.test(c)) throw new UnsupportedPattern(`\\${c}`);
    else ch = c; // \. \- \\ \/ …
    return inClass ? [[ch, ch]] : jsonChar(ch);
  }

  private charClass(): string {
    let negated = false;
    if (this.peek() === "^") {
      negated = true;
      this.i++;
    }
    const ranges: Range[] = [];
    let first = true;
    while (this.i < this.src.length && (this.peek() !== "]" || first)) {
      first = false;
      let lo: Range[];
      if (this.peek() === "\\") {
        this.i++;
        lo = this.escape(true) as Range[];
      } else {
        const ch = String.fromCodePoint(this.src.codePointAt(this.i)!);
        this.i += ch.length;
        lo = [[ch, ch]];
      }
      if (lo.length === 1 && lo[0][0] === lo[0][1] && this.peek() === "-" && this.src[this.i + 1] !== "]" && this.i + 1 < this.src.length) {
        this.i++;
        let hi: string;
        if (this.peek() === "\\") {
          this.i++;
          const r = this.escape(true) as Range[];
          if (r.length !== 1 || r[0][0] !== r[0][1]) throw new UnsupportedPattern("class range to a shorthand");
          hi = r[0][0];
        } else {
          hi = String.fromCodePoint(this.src.codePointAt(this.i)!);
          this.i += hi.length;
        }
        ranges.push([lo[0][0], hi]);
      } else ranges.push(...lo);
    }
    if (this.src[this.i++] !== "]") throw new UnsupportedPattern("unclosed class");
    if (negated) return cls(`^${ranges.map(rangeText).join("")}${EXCLUDED}`);
    // a positive class keeps only what JSON can hold unescaped (a subset of the class)
    const safe = ranges.flatMap(withoutUnsafe);
    if (!safe.length) throw new UnsupportedPattern("class of only quote, backslash or control characters");
    return cls(safe.map(rangeText).join(""));
  }
}

const rangeText = ([a, b]: Range) => (a === b ? code(a) : `${code(a)}-${code(b)}`);

/** The parts of a range outside `"` (0x22), `\` (0x5C), control characters and DEL. */
const SAFE: Array<[number, number]> = [[0x20, 0x21], [0x23, 0x5b], [0x5d, 0x7e], [0x80, 0x10ffff]];
function withoutUnsafe([a, b]: Range): Range[] {
  const lo = a.codePointAt(0)!;
  const hi = b.codePointAt(0)!;
  const out: Range[] = [];
  for (const [x, y] of SAFE) {
    const from = Math.max(lo, x);
    const to = Math.min(hi, y);
    if (from <= to) out.push([String.fromCodePoint(from), String.fromCodePoint(to)]);
  }
  return out;
}

/** GBNF for a JSON string whose content matches `pattern`; throws UnsupportedPattern. */
export function patternRule(pattern: string, cap: number): string {
  // anchors at the ends only: a value matching the whole pattern also satisfies an unanchored one
  let p = pattern.startsWith("^") ? pattern.slice(1) : pattern;
  if (p.endsWith("$") && !p.endsWith("\\$")) p = p.slice(0, -1);
  return new Parser(p, cap).parse();
}

// The integer-range grammar (engines/inference/gbnf-ranges.ts) accepts exactly the integers in
// range: its GBNF (quoted digits, digit classes, {n} repeats, alternatives) is read as a regular
// expression and checked against every integer around the bounds. And the pattern grammar
// (regex-gbnf.ts) refuses what it cannot express, so the caller can drop the pattern.
import { describe, expect, it } from "vitest";
import { boundedIntegerRule, boundedNumberRule, integerRangeRule } from "../../engines/inference/gbnf-ranges";
import { patternRule, UnsupportedPattern } from "../../engines/inference/regex-gbnf";

/** This module's GBNF subset as a JS RegExp (whole match). */
function asRegex(gbnf: string): RegExp {
  const re = gbnf
    .replace(/"([^"]*)"/g, (_m, lit: string) => lit.replace(/[.*+?^${}()|[\]\\-]/g, "\\$&"))
    .replace(/\(/g, "(?:")
    .replace(/\s+/g, "");
  return new RegExp(`^(?:${re})$`);
}

describe("integer ranges", () => {
  const cases: Array<[number, number]> = [
    [0, 0], [0, 9], [3, 17], [5, 5], [7, 1234], [10, 99], [99, 101], [100, 105], [-5, 5], [-123, -7], [-1, 0], [-1000, 999], [19, 2010], [1, 100000],
  ];
  for (const [lo, hi] of cases) {
    it(`[${lo}, ${hi}] accepts exactly the integers in range`, () => {
      const re = asRegex(integerRangeRule(lo, hi));
      const from = lo - 200;
      const to = hi + 200;
      for (let n = from; n <= to; n++) expect(re.test(String(n)), `${n} in [${lo}, ${hi}]: ${integerRangeRule(lo, hi)}`).toBe(n >= lo && n <= hi);
      expect(re.test("-0")).toBe(false);
      expect(re.test(`0${Math.max(lo, 1)}`)).toBe(false); // no leading zeros
    });
  }

  it("open ends stop at 15 digits; exclusive bounds and draft-4 booleans are honoured", () => {
    const min = asRegex(boundedIntegerRule({ minimum: 1000 })!);
    expect(min.test("999")).toBe(false);
    expect(min.test("1000")).toBe(true);
    expect(min.test("999999999999999")).toBe(true);
    expect(min.test("1000000000000000")).toBe(false);
    const ex = asRegex(boundedIntegerRule({ exclusiveMinimum: -5, exclusiveMaximum: 5 })!);
    expect(["-5", "5"].some((x) => ex.test(x))).toBe(false);
    expect(["-4", "0", "4"].every((x) => ex.test(x))).toBe(true);
    const old = asRegex(boundedIntegerRule({ minimum: 0, maximum: 3, exclusiveMaximum: true })!);
    expect(old.test("3")).toBe(false);
    expect(old.test("2")).toBe(true);
    expect(boundedIntegerRule({ minimum: 5, maximum: 4 })).toBeNull();
  });

  it("numbers stay within their bounds, fractions included", () => {
    const re = asRegex(boundedNumberRule({ minimum: -2.5, maximum: 7.25 })!);
    for (const ok of ["-2", "0", "7", "0.5", "6.999"]) expect(re.test(ok), ok).toBe(true);
    for (const bad of ["-3", "8", "7.5", "-2.5x"]) expect(re.test(bad), bad).toBe(false);
    const unit = asRegex(boundedNumberRule({ exclusiveMinimum: 0, exclusiveMaximum: 1 })!);
    expect(unit.test("0.5")).toBe(true);
    expect(unit.test("0")).toBe(false);
  });
});

describe("patterns", () => {
  it("refuses lookaround, backreferences and word boundaries", () => {
    for (const p of ["^(?=a)b$", "(a)\\1", "\\bword\\b", "a^b"]) expect(() => patternRule(p, 10), p).toThrow(UnsupportedPattern);
  });

  it("writes quotes and backslashes escaped, and keeps them out of classes", () => {
    expect(patternRule('^a"b$', 5)).toBe('"\\"" "a" "\\\\\\"" "b" "\\""');
    expect(patternRule("^[a\"]$", 5)).toBe('"\\"" [a] "\\""');
  });
});

// The injected clock of the "today's usage" tests (test/helpers/clock.ts): it reads 12:xx UTC of
// the current day, moves at the real pace, and the real clock is back after restore.
import { describe, expect, it } from "vitest";
import { until } from "../helpers/http";
import { pinToMiddayUtc } from "../helpers/clock";

describe("pinToMiddayUtc", () => {
  it("reads midday UTC today, advances, and restores the real Date", async () => {
    const realDay = new Date().toISOString().slice(0, 10);
    const RealDate = Date;
    const restore = pinToMiddayUtc();
    try {
      const a = Date.now();
      expect(new Date(a).toISOString().slice(0, 13)).toBe(`${realDay}T12`);
      expect(new Date().getUTCHours()).toBe(12);
      expect(new Date("2020-01-02T03:04:05Z").toISOString()).toBe("2020-01-02T03:04:05.000Z");
      expect(new Date(0).getTime()).toBe(0);
      await until(() => Date.now() > a + 20);
      expect(new Date().getTime()).toBeGreaterThan(a + 20);
    } finally {
      restore();
    }
    expect(Date).toBe(RealDate);
  });
});

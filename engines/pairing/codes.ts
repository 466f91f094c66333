// One-time pairing codes: 6 digits, valid 5 minutes, single use. Five wrong tries (across all
// outstanding codes: a wrong guess names no code) void every outstanding code until the host
// makes a new one; each address gets at most 10 failed tries a minute. State is in memory (a restart
// voids outstanding codes), or in Redis when replicas share it (engines/pairing/kv.ts).
import { randomInt } from "node:crypto";
import { SvcError } from "../errors";
import type { PairKv } from "./kv";

export const CODE_TTL_MS = 5 * 60_000;
export const MAX_WRONG = 5;
export const PER_IP_PER_MINUTE = 10;
/** the wrong-try count and the lock last until a new code is made (kept at most this long) */
const LOCK_TTL_MS = 30 * 86_400_000;

export interface Code {
  expiresMs: number;
  scopes?: string[];
}

/** Codes, the wrong-try count, the lock and each address's tries, in `kv` (memory or Redis). */
export class PairingCodes {
  constructor(private readonly now: () => number, private readonly kv: PairKv) {}

  async create(scopes?: string[]): Promise<{ code: string; expiresMs: number }> {
    const expiresMs = this.now() + CODE_TTL_MS;
    let code: string;
    do code = String(randomInt(0, 1_000_000)).padStart(6, "0");
    while (!(await this.kv.claim(`code:${code}`, JSON.stringify({ expiresMs, scopes }), CODE_TTL_MS)));
    await this.kv.del(["codes:wrong", "codes:locked"]);
    return { code, expiresMs };
  }

  /** Consume a code; throws 429 (per-address rate), 403 (locked) or 400 (wrong or expired). */
  async redeem(code: string, ip: string): Promise<Code> {
    const now = this.now();
    const triesKey = `tries:${ip}`;
    const recent = (JSON.parse((await this.kv.get(triesKey)) ?? "[]") as number[]).filter((t) => t > now - 60_000);
    if (recent.length >= PER_IP_PER_MINUTE) {
      const retry = Math.max(1, Math.ceil((recent[0] + 60_000 - now) / 1000));
      throw new SvcError("rate_limited", "rate_limit_exceeded", `too many pairing-code attempts from ${ip}; wait ${retry} s`, null, { retryAfterSeconds: retry });
    }
    // failed tries count against the address (a right code is not a guess)
    const failed = () => this.kv.put(triesKey, JSON.stringify([...recent, now]), 60_000);
    if (await this.kv.get("codes:locked")) {
      await failed();
      throw new SvcError("forbidden", "permission_denied", `pairing codes are locked after ${MAX_WRONG} wrong tries; make a new code on the host (svc pair code)`);
    }
    const found = /^\d{6}$/.test(code) ? await this.kv.take(`code:${code}`) : null;
    if (!found) {
      await failed();
      const wrong = await this.kv.incr("codes:wrong", LOCK_TTL_MS);
      if (wrong >= MAX_WRONG) {
        await this.kv.put("codes:locked", "1", LOCK_TTL_MS);
        await this.kv.del(await this.kv.keys("code:"));
        throw new SvcError("forbidden", "permission_denied", `wrong pairing code; ${MAX_WRONG} wrong tries: every outstanding code is void, make a new one on the host (svc pair code)`, "code");
      }
      throw new SvcError("invalid", "invalid_request", `wrong or expired pairing code (${MAX_WRONG - wrong} tries left before codes are locked)`, "code");
    }
    return JSON.parse(found) as Code;
  }
}

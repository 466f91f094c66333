// One-time pairing codes: 6 digits, valid 5 minutes, single use. Five wrong tries (across all
// outstanding codes: a wrong guess names no code) void every outstanding code until the host
// makes a new one; each address gets at most 10 failed tries a minute. State is in memory: a restart
// voids outstanding codes, and the host makes a new one.
import { randomInt } from "node:crypto";
import { SvcError } from "../errors";

export const CODE_TTL_MS = 5 * 60_000;
export const MAX_WRONG = 5;
export const PER_IP_PER_MINUTE = 10;

interface Code {
  expiresMs: number;
  scopes?: string[];
}

export class PairingCodes {
  private codes = new Map<string, Code>();
  private wrong = 0;
  private locked = false;
  private tries = new Map<string, number[]>();

  constructor(private readonly now: () => number) {}

  create(scopes?: string[]): { code: string; expiresMs: number } {
    this.prune();
    let code: string;
    do code = String(randomInt(0, 1_000_000)).padStart(6, "0");
    while (this.codes.has(code));
    const expiresMs = this.now() + CODE_TTL_MS;
    this.codes.set(code, { expiresMs, scopes });
    this.wrong = 0;
    this.locked = false;
    return { code, expiresMs };
  }

  /** Consume a code; throws 429 (per-address rate), 403 (locked) or 400 (wrong or expired). */
  redeem(code: string, ip: string): Code {
    const now = this.now();
    const recent = (this.tries.get(ip) ?? []).filter((t) => t > now - 60_000);
    if (recent.length >= PER_IP_PER_MINUTE) {
      const retry = Math.max(1, Math.ceil((recent[0] + 60_000 - now) / 1000));
      throw new SvcError("rate_limited", "rate_limit_exceeded", `too many pairing-code attempts from ${ip}; wait ${retry} s`, null, { retryAfterSeconds: retry });
    }
    // failed tries count against the address (a right code is not a guess)
    const failed = () => {
      recent.push(now);
      this.tries.set(ip, recent);
      if (this.tries.size > 10_000) this.tries.clear();
    };
    if (this.locked) failed();
    if (this.locked) throw new SvcError("forbidden", "permission_denied", `pairing codes are locked after ${MAX_WRONG} wrong tries; make a new code on the host (svc pair code)`);
    this.prune();
    const c = typeof code === "string" ? this.codes.get(code) : undefined;
    if (!c) {
      failed();
      this.wrong++;
      if (this.wrong >= MAX_WRONG) {
        this.locked = true;
        this.codes.clear();
        throw new SvcError("forbidden", "permission_denied", `wrong pairing code; ${MAX_WRONG} wrong tries: every outstanding code is void, make a new one on the host (svc pair code)`, "code");
      }
      throw new SvcError("invalid", "invalid_request", `wrong or expired pairing code (${MAX_WRONG - this.wrong} tries left before codes are locked)`, "code");
    }
    this.codes.delete(code);
    return c;
  }

  private prune() {
    const now = this.now();
    for (const [k, c] of this.codes) if (c.expiresMs <= now) this.codes.delete(k);
  }
}

// Webhook signatures: `svc-webhook-signature: v1=<hex HMAC-SHA256(secret, "<timestamp>.<body>")>`.
// Signing the timestamp with the body lets receivers refuse replays of old deliveries.
import { createHmac, timingSafeEqual } from "node:crypto";

export function sign(secret: string, timestamp: number | string, body: string): string {
  return `v1=${createHmac("sha256", secret).update(`${timestamp}.${body}`).digest("hex")}`;
}

/**
 * For receivers and tests. `header` may list several signatures separated by spaces or commas
 * (e.g. during secret rotation); any valid `v1=` entry passes. Compared in constant time.
 * `toleranceSec` (optional) also refuses timestamps further than that from now.
 */
export function verifySignature(secret: string, timestamp: number | string, body: string, header: string | undefined | null, toleranceSec?: number): boolean {
  if (!header || !secret) return false;
  const ts = String(timestamp);
  if (!/^\d{1,12}$/.test(ts)) return false;
  if (toleranceSec !== undefined && Math.abs(Date.now() / 1000 - Number(ts)) > toleranceSec) return false;
  const expected = Buffer.from(sign(secret, ts, body));
  let ok = false;
  for (const part of header.split(/[\s,]+/)) {
    const got = Buffer.from(part);
    // timingSafeEqual needs equal lengths; the length of a hex HMAC is public anyway.
    if (got.length === expected.length && timingSafeEqual(got, expected)) ok = true;
  }
  return ok;
}

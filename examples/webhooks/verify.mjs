// Verify an svc webhook delivery (Node 18+, no dependencies). Pass the body exactly as received
// (a Buffer or string, before any JSON parsing) and the request's headers (lower-case names).
import { createHmac, timingSafeEqual } from "node:crypto";

export function verifySvcWebhook(secret, headers, rawBody, toleranceSeconds = 300) {
  const timestamp = headers["svc-webhook-timestamp"];
  const signatures = headers["svc-webhook-signature"];
  if (typeof timestamp !== "string" || typeof signatures !== "string" || !/^\d+$/.test(timestamp)) return false;
  // refuse old deliveries replayed by someone who captured one
  if (Math.abs(Date.now() / 1000 - Number(timestamp)) > toleranceSeconds) return false;
  const expected = Buffer.from(
    "v1=" + createHmac("sha256", secret).update(timestamp + ".").update(rawBody).digest("hex"),
  );
  // the header may hold several space- or comma-separated signatures (secret rotation)
  return signatures.split(/[\s,]+/).some((s) => {
    const got = Buffer.from(s);
    return got.length === expected.length && timingSafeEqual(got, expected);
  });
}

// Where a webhook may be sent: HTTPS anywhere, plain HTTP only to a loopback receiver
// (127.0.0.0/8, ::1, localhost), so event data and signatures never cross a network in clear.
import { isLoopbackAddress } from "../../loopback-address";

export function isLoopbackHost(hostname: string): boolean {
  const h = hostname.replace(/^\[|\]$/g, "").toLowerCase();
  return h === "localhost" || h.endsWith(".localhost") || isLoopbackAddress(h);
}

/** undefined when the URL may be called, else why not (stored as the delivery's lastError). */
export function refuseReason(url: string): string | undefined {
  let u: URL;
  try {
    u = new URL(url);
  } catch {
    return `webhook url is not a valid URL`;
  }
  if (u.username || u.password) return "webhook url must not carry credentials";
  if (u.protocol === "https:") return undefined;
  if (u.protocol === "http:" && isLoopbackHost(u.hostname)) return undefined;
  return `refused: webhook url must use https (plain http is allowed only for loopback receivers), got ${u.protocol}//${u.host}`;
}

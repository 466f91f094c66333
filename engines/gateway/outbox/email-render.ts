// The words of an alert e-mail: subject and plain-text body, rendered once when the alert fires
// (the outbox stores them, so a later settings change cannot alter what was raised).
import type { WebhookEventName } from "../key-types";

export interface AlertMail {
  subject: string;
  text: string;
}

/** Alert events that are e-mailed to budget_alerts.notify_email. */
export const EMAILED_EVENTS = new Set<WebhookEventName>(["key.budget_threshold", "key.limit_exceeded", "key.suspicious_activity"]);

const money = (v: unknown, currency: unknown) => (typeof v !== "number" ? String(v) : currency === "USD" || currency === undefined ? `$${v.toFixed(2)}` : `${v.toFixed(2)} ${String(currency)}`);

export function renderAlertMail(key: { id: string; name: string }, event: WebhookEventName, data: Record<string, unknown>, at: Date): AlertMail {
  const who = `API key "${key.name}" (${key.id})`;
  let subject: string;
  let lead: string;
  switch (event) {
    case "key.budget_threshold":
      subject = `[svc] ${key.name}: ${data.threshold}% of the ${data.period} budget reached`;
      lead = `${who} has used ${data.percent_used}% of its ${data.period} budget (threshold ${data.threshold}%): ${money(data.spend, data.currency)} of ${money(data.budget, data.currency)} in period ${data.period_id}.`;
      break;
    case "key.limit_exceeded":
      subject = data.kind === "rate_limit_warning" ? `[svc] ${key.name}: ${data.used_percentage}% of the rate limit used` : `[svc] ${key.name}: ${data.limit} limit exceeded`;
      lead = data.kind === "rate_limit_warning"
        ? `${who} has used ${data.used_percentage}% of its rate limit (alert at ${data.threshold_percentage}%).`
        : `${who} was refused a request: its ${data.limit} limit is exceeded.`;
      break;
    case "key.suspicious_activity":
      subject = `[svc] ${key.name}: suspicious activity (${data.reason})`;
      lead = `Suspicious activity on ${who}: ${data.reason}.`;
      break;
    default:
      subject = `[svc] ${key.name}: ${event}`;
      lead = `${event} on ${who}.`;
  }
  const details = Object.entries(data)
    .filter(([, v]) => v !== undefined && v !== null && v !== "")
    .map(([k, v]) => `  ${k}: ${typeof v === "object" ? JSON.stringify(v) : String(v)}`);
  const text = [lead, "", `Event: ${event}`, `Key: ${key.name}`, `Key id: ${key.id}`, `Time: ${at.toISOString()}`, "", "Details:", ...details, ""].join("\n");
  return { subject, text };
}

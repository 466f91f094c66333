// Moved to engines/secrets/redact.ts (the one redactor); kept so existing imports keep working.
export { rememberSecret, redactSecrets, redactTail, forgetSecrets } from "../secrets/redact";

// No secrets in URLs. A URL is shown in plans, exports, status messages and logs, so a credential
// in it leaks everywhere. The rule, for every URL svc calls (McpServer url, Provider baseUrl,
// webhook url): no userinfo (`user:pass@`), and no query parameter whose name, split into words
// (`api_key`, `X-Amz-Signature`, `accessToken`), has a credential word in it. Each URL field
// names the secure field to use instead; the value itself is never repeated in the message.

const CREDENTIAL_WORDS = new Set([
  "token",
  "key",
  "apikey",
  "secret",
  "password",
  "passwd",
  "pwd",
  "pass",
  "sig",
  "signature",
  "auth",
  "authorization",
  "credential",
  "credentials",
  "jwt",
  "bearer",
  "session",
  "sessionid",
  "cookie",
  "code",
]);

/** The words of a parameter name: split on non-alphanumerics and camelCase humps, lower-cased. */
function words(name: string): string[] {
  return name
    .replace(/([a-z0-9])([A-Z])/g, "$1 $2")
    .split(/[^A-Za-z0-9]+/)
    .filter(Boolean)
    .map((w) => w.toLowerCase());
}

/** Does a query parameter of this name look like it carries a credential? */
export function isCredentialParam(name: string): boolean {
  const ws = words(name);
  return ws.some((w) => CREDENTIAL_WORDS.has(w)) || CREDENTIAL_WORDS.has(ws.join(""));
}

/**
 * Why `url` carries a credential, or undefined when it does not (or is not a URL: format checks
 * report that). `instead` names the secure field, e.g. "auth.token or auth.headers".
 */
export function urlCredentialProblem(url: string, instead: string): string | undefined {
  let u: URL;
  try {
    u = new URL(url);
  } catch {
    return undefined;
  }
  if (u.username || u.password) return `must not carry credentials (user:password@): put the secret in ${instead}`;
  const names = [...new Set([...u.searchParams.keys()])].filter(isCredentialParam);
  if (names.length) {
    const list = names.map((n) => JSON.stringify(n)).join(", ");
    return `must not carry credentials in its query string (parameter ${list}): put the secret in ${instead}, as a reference (env:NAME or file:/path)`;
  }
  return undefined;
}

/** The URL fields of each kind, with the field to use instead (JSON pointers inside the document). */
export const URL_FIELDS: Record<string, Array<{ path: string[]; instead: string }>> = {
  McpServer: [{ path: ["spec", "url"], instead: "auth.token (Authorization: Bearer) or auth.headers" }],
  Provider: [{ path: ["spec", "baseUrl"], instead: "credential (Authorization) or headers" }],
  ApiKey: [{ path: ["spec", "webhook", "url"], instead: "webhook.secret (receivers verify the svc-webhook-signature header)" }],
};

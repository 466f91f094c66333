// Checks of an McpServer spec and its label in messages, apart from the transports that use them:
// the McpServer controller checks specs without loading the MCP SDK.
import type { McpServerSpec } from "../../schemas/kinds/mcp-server";
import { urlCredentialProblem } from "../../manifests/url-credentials";

/** Spec errors that make a connection pointless; null when the spec is usable. */
export function specProblem(s: McpServerSpec): string | null {
  if (s.transport === "http") {
    if (!s.url) return "transport http needs url";
    try {
      const u = new URL(s.url);
      if (u.protocol !== "http:" && u.protocol !== "https:") return `url must be http or https, not ${u.protocol}`;
      const cred = urlCredentialProblem(s.url, "auth.token (Authorization: Bearer) or auth.headers");
      if (cred) return `url ${cred}`;
    } catch {
      return "url is not a valid URL";
    }
    const a = s.auth ?? { type: "none" };
    if (a.type === "token" && !a.token) return "auth type token needs auth.token (env:NAME or file:/path)";
    if (a.type === "headers" && !Object.keys(a.headers ?? {}).length) return "auth type headers needs auth.headers";
    if (a.type === "oauth" && a.grant !== "authorization_code" && (!a.clientId || !a.clientSecret)) return "auth type oauth needs auth.clientId and auth.clientSecret";
    return null;
  }
  if (!s.command) return "transport stdio needs command";
  return null;
}

export function endpointLabel(s: McpServerSpec): string {
  if (s.transport === "http" && s.url) {
    try {
      const u = new URL(s.url);
      return `${u.origin}${u.pathname}`;
    } catch {
      return "(invalid url)";
    }
  }
  return `command ${s.command ?? "?"}`;
}

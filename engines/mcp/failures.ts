// Why a tool service is not usable, as a Ready=False reason with a hint (the spec's list of
// tool-service failures, plus the two that come before any connection: a bad spec and a secret
// reference that does not resolve).
import { McpError, ErrorCode } from "@modelcontextprotocol/sdk/types.js";
import { StreamableHTTPError } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { UnauthorizedError } from "@modelcontextprotocol/sdk/client/auth.js";
import { OAuthError } from "@modelcontextprotocol/sdk/server/auth/errors.js";
import { redactSecrets } from "../secrets/redact";

export type FailureReason =
  | "InvalidSpec"
  | "SecretMissing"
  | "ConnectionRefused"
  | "AuthRejected"
  | "AuthorizationRequired"
  | "DiscoveryTimeout"
  | "SchemaError"
  | "ExecutionDenied"
  | "ToolGone";

export class ServiceFailure extends Error {
  constructor(
    readonly reason: FailureReason,
    message: string,
    readonly hint: string,
  ) {
    // a service's own words (errors, stderr) end up in status and logs: never its secrets
    super(redactSecrets(message));
  }
}

const HINTS: Record<FailureReason, string> = {
  InvalidSpec: "fix the McpServer manifest",
  SecretMissing: "an env: reference is read from svc's own environment: restart svc with the variable set; for a file: reference, create the file, then re-apply or wait for the retry",
  ConnectionRefused: "check the url (http) or command, args and cwd (stdio), and that the service starts on its own",
  AuthRejected: "the service refused the credentials: check auth (token, headers or oauth) and the secrets they reference",
  AuthorizationRequired: "run `svc mcp login <name>` on the svc host and open the URL it prints (engines/mcp/oauth.ts)",
  DiscoveryTimeout: "the service did not answer initialize and tools/list in time: check it, or raise discoveryTimeoutSeconds",
  SchemaError: "the service advertised tools whose inputSchema is not a valid JSON Schema; they are left out of the catalog",
  ExecutionDenied: "the service refused to run the tool (its permissions or policy for the configured credentials); a successful call clears this",
  ToolGone: "the tool disappeared in a catalog refresh; list the tools again (a successful call clears this)",
};

export function failure(reason: FailureReason, message: string, hint = HINTS[reason]): ServiceFailure {
  return new ServiceFailure(reason, message, hint);
}

function causeCode(e: any): string | undefined {
  for (let c = e, i = 0; c && i < 5; c = c.cause, i++) if (typeof c.code === "string") return c.code;
  return undefined;
}

/** Classify an error seen while connecting or listing tools. */
export function classifyConnectError(e: unknown, where: string, stderrTail?: string): ServiceFailure {
  if (e instanceof ServiceFailure) return e;
  const err = e as any;
  const tail = stderrTail ? `; its stderr ended with: ${stderrTail}` : "";
  if (e instanceof UnauthorizedError) return failure("AuthRejected", `${where}: unauthorized (${err.message})`);
  if (e instanceof OAuthError) return failure("AuthRejected", `${where}: the authorization server refused the client credentials (${err.errorCode ?? err.message})`);
  if (e instanceof StreamableHTTPError) {
    const code = (err as { code?: number }).code;
    if (code === 401 || code === 403) return failure("AuthRejected", `${where} answered HTTP ${code}`);
    if (code === 404) return failure("ConnectionRefused", `${where} answered HTTP 404: no MCP endpoint at this url`);
    return failure("ConnectionRefused", `${where}: ${err.message}`);
  }
  const sys = causeCode(err);
  if (sys === "ENOENT") return failure("ConnectionRefused", `${where}: command not found (${err.message})`);
  if (sys === "EACCES") return failure("ConnectionRefused", `${where}: command not executable (${err.message})`);
  if (sys && /^E[A-Z]+/.test(sys)) return failure("ConnectionRefused", `${where}: ${sys}${tail}`);
  if (e instanceof McpError && e.code === ErrorCode.ConnectionClosed) {
    return failure("ConnectionRefused", `${where}: the service closed the connection before answering${tail}`);
  }
  if (err?.name === "ZodError" || (e instanceof McpError && e.code === ErrorCode.InvalidParams)) {
    return failure("SchemaError", `${where}: malformed answer (${String(err.message).slice(0, 300)})`);
  }
  if (err instanceof TypeError && /fetch failed/.test(err.message)) return failure("ConnectionRefused", `${where}: ${err.message}${tail}`);
  return failure("ConnectionRefused", `${where}: ${err?.message ?? String(e)}${tail}`);
}

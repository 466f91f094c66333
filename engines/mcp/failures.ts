// Why a tool service is not usable, as a Ready=False reason with a hint (the spec's list of
// tool-service failures, plus the two that come before any connection: a bad spec and a secret
// reference that does not resolve). Classifying the MCP SDK's errors is in classify.ts, loaded with
// the first connection: this module does not load the SDK.
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

// Which failure an error seen while connecting or listing tools stands for (the MCP SDK's error
// classes), loaded with the connections (connection.ts), not with the engine.
import { McpError, ErrorCode } from "@modelcontextprotocol/sdk/types.js";
import { StreamableHTTPError } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { UnauthorizedError } from "@modelcontextprotocol/sdk/client/auth.js";
import { OAuthError } from "@modelcontextprotocol/sdk/server/auth/errors.js";
import { ServiceFailure, failure } from "./failures";

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

// The client transport of one McpServer spec: stdio (a child process with its own environment,
// secrets resolved from references) or Streamable HTTP (auth: bearer token, custom headers or
// the OAuth client-credentials grant). Secrets are resolved at each connect, so a rotated
// variable or file is used on the next reconnect; they never appear in messages.
import type { ChildProcess } from "node:child_process";
import type { Transport } from "@modelcontextprotocol/sdk/shared/transport.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { ClientCredentialsProvider } from "@modelcontextprotocol/sdk/client/auth-extensions.js";
import type { OAuthClientProvider } from "@modelcontextprotocol/sdk/client/auth.js";
import { StoredOAuthProvider, authorizationRequired, usesAuthorizationCode } from "./oauth";
import type { McpServerSpec } from "../../schemas/kinds/mcp-server";
import { describeMissing, resolveSecretRef } from "../secrets/refs";
import { redactTail } from "../secrets/redact";
import { failure } from "./failures";
import { outboundFetch } from "../net/outbound-guard";
import { endpointLabel, specProblem } from "./spec";
import { LeanReadBuffer } from "./lean-messages";

// the spec checks live apart (no MCP SDK), for the McpServer controller
export { endpointLabel, specProblem };

/** Characters of a stdio service's stderr kept for failure messages. */
const STDERR_KEPT = 4096;

export interface BuiltTransport {
  transport: Transport;
  /** what to call it in messages: never includes credentials */
  where: string;
  /** the last lines the stdio service wrote to stderr */
  stderrTail?: () => string;
}

function secret(ref: string, what: string): string {
  const v = resolveSecretRef(ref);
  if (v === undefined) throw failure("SecretMissing", `${what} (${ref}): ${describeMissing(ref)}`);
  return v;
}

/** How long the stdio pipes may outlive the service's process before svc treats it as gone. */
const EXIT_GRACE_MS = 1000;

/**
 * The SDK's stdio transport reports a closed connection on the child's "close" event, which waits
 * for the process to exit AND for its stdout/stderr pipes to close. A process the service started
 * with inherited stdio (a helper, a shell's background job) keeps those pipes open after the
 * service itself exited: the close never came, a call in flight waited for the tool-call timeout,
 * every later call timed out too, and the status stayed Connected. So once the process has exited,
 * its pipes get a short grace to drain, then are destroyed, which lets "close" (and so the
 * reconnect) happen.
 */
function noticeExit(t: StdioClientTransport): void {
  const start = t.start.bind(t);
  t.start = async () => {
    await start();
    const proc = (t as unknown as { _process?: ChildProcess })._process; // an SDK without the field keeps its behaviour
    proc?.once("exit", () => {
      const timer = setTimeout(() => {
        proc.stdout?.destroy();
        proc.stderr?.destroy();
      }, EXIT_GRACE_MS);
      timer.unref();
      proc.once("close", () => clearTimeout(timer));
    });
  };
}

export function buildTransport(s: McpServerSpec, ctx?: { home?: string; service?: string }): BuiltTransport {
  const problem = specProblem(s);
  if (problem) throw failure("InvalidSpec", problem);
  const where = endpointLabel(s);
  if (s.transport === "stdio") {
    const env: Record<string, string> = { ...(s.env ?? {}) };
    for (const [k, ref] of Object.entries(s.envFrom ?? {})) env[k] = secret(ref, `envFrom.${k}`);
    const t = new StdioClientTransport({ command: s.command!, args: s.args ?? [], env, cwd: s.cwd, stderr: "pipe" });
    // the SDK's own line buffer, with result responses checked without its union parse (lean-messages.ts);
    // an SDK without that private field keeps its own buffer
    const internals = t as unknown as { _readBuffer?: unknown };
    if (internals._readBuffer !== undefined) internals._readBuffer = new LeanReadBuffer();
    noticeExit(t);
    // The raw tail stays in memory only; whatever is read from it goes through the redactor
    // as a whole, so a secret the service echoes in several writes is masked all the same.
    let tail = "";
    t.stderr?.on("data", (chunk: Buffer) => {
      tail = (tail + chunk.toString("utf8")).slice(-STDERR_KEPT);
    });
    return { transport: t, where, stderrTail: () => redactTail(tail).trim().split("\n").slice(-3).join(" | ").slice(-300) };
  }
  const a = s.auth ?? { type: "none" };
  const headers: Record<string, string> = {};
  if (a.type === "token") headers.authorization = `Bearer ${secret(a.token!, "auth.token")}`;
  if (a.type === "headers") for (const [h, ref] of Object.entries(a.headers ?? {})) headers[h] = secret(ref, `auth.headers.${h}`);
  let authProvider: OAuthClientProvider | undefined;
  if (usesAuthorizationCode(s)) {
    if (!ctx?.home || !ctx.service) throw failure("InvalidSpec", "auth grant authorization_code needs a data dir for its tokens");
    const p = new StoredOAuthProvider(ctx.home, ctx.service, a, undefined, s.url); // tokens of another url (the manifest changed) are not sent
    // never logged in: say so without a round trip (and without registering a client)
    if (!p.hasTokens()) throw authorizationRequired(ctx.service);
    authProvider = p;
  } else if (a.type === "oauth") {
    const opts = { clientId: a.clientId!, clientSecret: secret(a.clientSecret!, "auth.clientSecret"), scope: a.scope, clientName: "svc" };
    authProvider = a.issuer ? new ClientCredentialsProvider({ ...opts, expectedIssuer: a.issuer }) : new ClientCredentialsProvider(opts);
  }
  const transport = new StreamableHTTPClientTransport(new URL(s.url!), {
    requestInit: { headers },
    fetch: outboundFetch(), // also carries the OAuth token requests
    authProvider,
    // reconnects are ours (with the service's backoff); the SDK's own SSE retries stay short
    reconnectionOptions: { maxReconnectionDelay: 30_000, initialReconnectionDelay: 1000, reconnectionDelayGrowFactor: 2, maxRetries: 2 },
  });
  return { transport, where };
}

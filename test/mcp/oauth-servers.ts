// Loopback stand-ins for a hosted MCP service behind OAuth: an authorization server built with the
// SDK's mcpAuthRouter over its demo in-memory provider (auto-approving, as a user clicking
// "Allow" would), extended with refresh tokens and revocation; and a protected MCP server
// (Streamable HTTP, stateless) behind requireBearerAuth, with its protected-resource metadata.
import { randomUUID } from "node:crypto";
import type { AddressInfo } from "node:net";
import type { Server } from "node:http";
import express from "express";
import { z } from "zod";
import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import { StreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/streamableHttp.js";
import { mcpAuthRouter, mcpAuthMetadataRouter, createOAuthMetadata, getOAuthProtectedResourceMetadataUrl } from "@modelcontextprotocol/sdk/server/auth/router.js";
import { requireBearerAuth } from "@modelcontextprotocol/sdk/server/auth/middleware/bearerAuth.js";
import { DemoInMemoryAuthProvider } from "@modelcontextprotocol/sdk/examples/server/demoInMemoryOAuthProvider.js";
import type { OAuthClientInformationFull, OAuthTokens } from "@modelcontextprotocol/sdk/shared/auth.js";
import type { AuthInfo } from "@modelcontextprotocol/sdk/server/auth/types.js";

/** The demo provider plus refresh tokens, expiry on demand and revocation. */
class TestAuthProvider extends DemoInMemoryAuthProvider {
  refreshes = 0;
  registrations = 0;
  /** every access token issued, newest last */
  issued: string[] = [];
  private refreshTokens = new Map<string, { clientId: string; scopes: string[] }>();
  private live = new Set<string>();

  constructor() {
    super();
    const store = this.clientsStore;
    const register = store.registerClient!.bind(store);
    store.registerClient = async (c: OAuthClientInformationFull) => {
      this.registrations++;
      return register(c);
    };
  }

  private issue(clientId: string, scopes: string[]): OAuthTokens {
    const access = randomUUID();
    const refresh = randomUUID();
    (this as any).tokens.set(access, { token: access, clientId, scopes, expiresAt: Date.now() + 3_600_000, type: "access" });
    this.live.add(access);
    this.issued.push(access);
    this.refreshTokens.set(refresh, { clientId, scopes });
    return { access_token: access, token_type: "bearer", expires_in: 3600, refresh_token: refresh, scope: scopes.join(" ") };
  }

  override async exchangeAuthorizationCode(client: OAuthClientInformationFull, code: string, verifier?: string): Promise<OAuthTokens> {
    const t = await super.exchangeAuthorizationCode(client, code, verifier);
    (this as any).tokens.delete(t.access_token);
    return this.issue(client.client_id, t.scope ? t.scope.split(" ") : []);
  }

  override async exchangeRefreshToken(client: OAuthClientInformationFull, refreshToken: string): Promise<OAuthTokens> {
    const r = this.refreshTokens.get(refreshToken);
    if (!r || r.clientId !== client.client_id) {
      const { InvalidGrantError } = await import("@modelcontextprotocol/sdk/server/auth/errors.js");
      throw new InvalidGrantError("refresh token is not valid");
    }
    this.refreshTokens.delete(refreshToken);
    this.refreshes++;
    return this.issue(client.client_id, r.scopes);
  }

  override async verifyAccessToken(token: string): Promise<AuthInfo> {
    if (!this.live.has(token)) throw new (await import("@modelcontextprotocol/sdk/server/auth/errors.js")).InvalidTokenError("token expired or revoked");
    return super.verifyAccessToken(token);
  }

  /** Access tokens stop working (as at their expiry); refresh tokens still work. */
  expireAccessTokens(): void {
    this.live.clear();
  }

  /** Everything stops working: the user revoked svc's access. */
  revokeAll(): void {
    this.live.clear();
    this.refreshTokens.clear();
  }
}

async function listen(app: express.Express): Promise<{ server: Server; base: string }> {
  const server = await new Promise<Server>((r) => {
    const s = app.listen(0, "127.0.0.1", () => r(s));
  });
  return { server, base: `http://127.0.0.1:${(server.address() as AddressInfo).port}` };
}

export async function startOAuthServices() {
  const provider = new TestAuthProvider();
  const asApp = express();
  const as = await listen(asApp);
  const issuerUrl = new URL(as.base);
  asApp.use(mcpAuthRouter({ provider, issuerUrl, scopesSupported: ["mcp:tools"] }));

  const rsApp = express();
  rsApp.use(express.json());
  const rs = await listen(rsApp);
  const mcpUrl = new URL(`${rs.base}/mcp`);
  rsApp.use(mcpAuthMetadataRouter({ oauthMetadata: createOAuthMetadata({ provider, issuerUrl, scopesSupported: ["mcp:tools"] }), resourceServerUrl: mcpUrl, scopesSupported: ["mcp:tools"] }));
  const bearer = requireBearerAuth({ verifier: provider, requiredScopes: [], resourceMetadataUrl: getOAuthProtectedResourceMetadataUrl(mcpUrl) });
  let calls = 0;
  rsApp.post("/mcp", bearer, async (req, res) => {
    const server = new McpServer({ name: "hosted", version: "1.0.0" });
    server.registerTool("whoami", { description: "who the caller is", inputSchema: { greeting: z.string() }, annotations: { readOnlyHint: true } }, async ({ greeting }, extra) => {
      calls++;
      return { content: [{ type: "text", text: `${greeting}, client ${extra.authInfo?.clientId}` }] };
    });
    const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined });
    res.on("close", () => {
      void transport.close();
      void server.close();
    });
    await server.connect(transport);
    await transport.handleRequest(req, res, req.body);
  });
  rsApp.get("/mcp", (_req, res) => res.status(405).end());
  rsApp.delete("/mcp", (_req, res) => res.status(405).end());

  return {
    provider,
    mcpUrl: mcpUrl.toString(),
    issuer: as.base,
    calls: () => calls,
    async close() {
      for (const s of [as.server, rs.server]) {
        s.closeAllConnections();
        await new Promise<void>((r) => s.close(() => r()));
      }
    },
  };
}

/** The "browser": open the authorization URL and follow the redirect to the callback. */
export async function approveInBrowser(url: string): Promise<{ callbackStatus: number; callbackText: string }> {
  let next = url;
  for (let i = 0; i < 5; i++) {
    const res = await fetch(next, { redirect: "manual" });
    const loc = res.headers.get("location");
    if (res.status >= 300 && res.status < 400 && loc) {
      next = new URL(loc, next).toString();
      continue;
    }
    return { callbackStatus: res.status, callbackText: await res.text() };
  }
  throw new Error("too many redirects");
}

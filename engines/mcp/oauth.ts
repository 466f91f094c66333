// MCP authorization (OAuth 2.1 authorization code + PKCE, authorization-server metadata discovery,
// dynamic client registration) through the MCP SDK's client auth: StoredOAuthProvider is the
// SDK's OAuthClientProvider over the encrypted per-service state of oauth-store.ts.
// - The running svc uses it non-interactively: tokens are sent and refreshed by the SDK; when there
//   are none (never logged in, revoked, refresh refused) the connection fails with
//   AuthorizationRequired naming the command to run.
// - `svc mcp login <service>` (runLogin) uses it interactively: it prints the authorization URL,
//   waits for the browser's redirect on a loopback callback server, and stores the tokens.
import { randomBytes } from "node:crypto";
import { auth, type OAuthClientProvider, type OAuthDiscoveryState } from "@modelcontextprotocol/sdk/client/auth.js";
import type { OAuthClientInformationMixed, OAuthClientMetadata, OAuthTokens } from "@modelcontextprotocol/sdk/shared/auth.js";
import type { McpServerSpec } from "../../schemas/kinds/mcp-server";
import { resolveSecretRef } from "../providers/credentials";
import { failure } from "./failures";
import { loadOAuthState, saveOAuthState, type OAuthState } from "./oauth-store";

export const loginCommand = (service: string) => `svc mcp login ${service}`;

/** True when the spec asks for the authorization-code grant (a user logs in once). */
export function usesAuthorizationCode(s: McpServerSpec): boolean {
  return s.transport === "http" && s.auth?.type === "oauth" && s.auth.grant === "authorization_code";
}

type Auth = McpServerSpec["auth"];

export function authorizationRequired(service: string) {
  return failure(
    "AuthorizationRequired",
    `${service} needs a user's authorization (no valid tokens: never logged in, or expired or revoked); run \`${loginCommand(service)}\``,
    `run \`${loginCommand(service)}\` on the svc host and open the URL it prints`,
  );
}

export class StoredOAuthProvider implements OAuthClientProvider {
  private saved: OAuthState;
  private readonly expectedState = randomBytes(16).toString("base64url");

  constructor(
    private readonly home: string,
    private readonly service: string,
    private readonly a: Auth,
    /** interactive (login): the loopback callback URL and where to show the authorization URL */
    private readonly login?: { redirectUrl: string; open: (url: URL) => void },
    /** the MCP endpoint the running svc connects to (the spec's url): state stored for another
     * endpoint (the manifest's url changed since the login) is not used */
    private readonly serverUrl?: string,
  ) {
    // A login starts from nothing and keeps its state in memory until it succeeds (runLogin saves
    // it): writing it as it went wiped the tokens svc was using for the whole login, so an
    // interrupted login (Ctrl-C, closed terminal) lost them, and a failed one put back a refresh
    // token svc had rotated meanwhile.
    this.saved = login ? {} : this.load();
  }

  /** The stored state, unless it was obtained for another MCP endpoint than this one: its tokens
   * (and a refresh through its cached discovery) must not go to a server they were not issued for. */
  private load(): OAuthState {
    const st = loadOAuthState(this.home, this.service);
    if (this.serverUrl && st.serverUrl && !sameUrl(st.serverUrl, this.serverUrl)) return {};
    return st;
  }

  /** What a finished login stores: the client, tokens and discovery, not the spent PKCE verifier. */
  loginState(serverUrl: string): OAuthState {
    const { codeVerifier: _spent, ...rest } = this.saved;
    return { ...rest, serverUrl };
  }

  /** Always set: without one the SDK would take this for a non-interactive (client-credentials)
   * client. In the running svc it is the URI registered at login; the flow never gets that far
   * without a login (redirectToAuthorization refuses). */
  get redirectUrl(): string {
    return this.login?.redirectUrl ?? this.saved.redirectUrl ?? "http://127.0.0.1/callback";
  }

  /** Tokens from a login exist (they may still be refused; the SDK then refreshes or asks again). */
  hasTokens(): boolean {
    return !!this.saved.tokens?.access_token;
  }

  get clientMetadata(): OAuthClientMetadata {
    return {
      client_name: "svc",
      redirect_uris: [this.redirectUrl],
      grant_types: ["authorization_code", "refresh_token"],
      response_types: ["code"],
      token_endpoint_auth_method: this.a.clientSecret ? "client_secret_post" : "none",
      ...(this.a.scope ? { scope: this.a.scope } : {}),
    };
  }

  state(): string {
    return this.expectedState;
  }

  clientInformation(): OAuthClientInformationMixed | undefined {
    if (this.a.clientId) {
      const secret = this.a.clientSecret ? resolveSecretRef(this.a.clientSecret) : undefined;
      return { client_id: this.a.clientId, ...(secret ? { client_secret: secret } : {}) };
    }
    return this.saved.client;
  }

  saveClientInformation(info: OAuthClientInformationMixed): void {
    if (this.a.clientId) return; // configured client: nothing to keep
    this.update({ client: info, redirectUrl: this.redirectUrl });
  }

  tokens(): OAuthTokens | undefined {
    return this.saved.tokens;
  }

  saveTokens(tokens: OAuthTokens): void {
    // a refresh answer may omit the refresh token: keep the one we have
    const refresh = tokens.refresh_token ?? this.saved.tokens?.refresh_token;
    this.update({ tokens: { ...tokens, ...(refresh ? { refresh_token: refresh } : {}) }, expiresAt: tokens.expires_in ? Date.now() + tokens.expires_in * 1000 : undefined });
  }

  redirectToAuthorization(url: URL): void {
    if (!this.login) throw authorizationRequired(this.service);
    this.login.open(url);
  }

  saveCodeVerifier(v: string): void {
    this.update({ codeVerifier: v });
  }

  codeVerifier(): string {
    if (!this.saved.codeVerifier) throw new Error("no PKCE code verifier saved: start again with svc mcp login");
    return this.saved.codeVerifier;
  }

  saveDiscoveryState(d: OAuthDiscoveryState): void {
    this.update({ discovery: d });
  }

  discoveryState(): OAuthDiscoveryState | undefined {
    return this.saved.discovery;
  }

  invalidateCredentials(scope: "all" | "client" | "tokens" | "verifier" | "discovery"): void {
    const s = { ...this.saved };
    if (scope === "all" || scope === "client") delete s.client;
    if (scope === "all" || scope === "tokens") (delete s.tokens, delete s.expiresAt);
    if (scope === "all" || scope === "verifier") delete s.codeVerifier;
    if (scope === "all" || scope === "discovery") delete s.discovery;
    this.saved = s;
    if (!this.login) saveOAuthState(this.home, this.service, s); // a login saves once, at the end
  }

  private update(p: Partial<OAuthState>): void {
    if (this.login) {
      this.saved = { ...this.saved, ...p }; // a login saves once, when it succeeds (runLogin)
      return;
    }
    // re-read first: another process (login, or a refresh by the server) may have written since
    this.saved = { ...this.load(), ...p };
    saveOAuthState(this.home, this.service, this.saved);
  }
}

export interface LoginOptions {
  home: string;
  service: string;
  spec: McpServerSpec;
  /** shows the URL to open (the CLI prints it) */
  print: (url: string) => void;
  /** give up after (default 5 minutes) */
  timeoutMs?: number;
  /** open the loopback listener the authorization server redirects to (api/oauth-callback.ts:
   * engines run no HTTP server); `port` 0 picks a free one */
  listen: (port: number) => Promise<OAuthCallback>;
}

/** What the redirect brought back (the authorization code, or the server's refusal). */
export interface Callback {
  code?: string;
  state?: string;
  error?: string;
  description?: string;
}

/** The loopback listener of one login: its port, the first callback, and how to close it. */
export interface OAuthCallback {
  port: number;
  code: Promise<Callback>;
  close(): Promise<void>;
}

/**
 * The authorization-code login of one service: a loopback callback server, the SDK's auth()
 * (discovery, dynamic registration, PKCE), the URL shown to the user, the code exchanged for
 * tokens that are stored encrypted. Resolves when the tokens are saved.
 */
export async function runLogin(o: LoginOptions): Promise<{ scope?: string }> {
  if (!usesAuthorizationCode(o.spec)) throw new Error(`McpServer ${o.service} does not use auth.type oauth with grant authorization_code`);
  const serverUrl = o.spec.url!;
  const { port, code, close } = await o.listen(o.spec.auth.callbackPort ?? 0);
  try {
    const redirectUrl = `http://127.0.0.1:${port}/callback`;
    // a fresh login: it starts without the old tokens and (unless configured) the client registered
    // for another port, but keeps its state in memory (StoredOAuthProvider with `login`): the stored
    // state, which the running svc keeps using and refreshing meanwhile, is replaced only when the
    // login succeeds, so one that does not finish (refused, timed out, interrupted) changes nothing
    let shown = false;
    const provider = new StoredOAuthProvider(o.home, o.service, o.spec.auth, {
      redirectUrl,
      open: (url) => {
        shown = true;
        o.print(url.toString());
      },
    });
    const first = await auth(provider, { serverUrl, scope: o.spec.auth.scope });
    if (first === "AUTHORIZED") {
      saveOAuthState(o.home, o.service, provider.loginState(serverUrl));
      return { scope: provider.tokens()?.scope };
    }
    if (!shown) throw new Error("the authorization server gave no URL to open");
    const got = await withTimeout(code, o.timeoutMs ?? 300_000, "no answer on the callback: open the URL in a browser on this machine");
    if (got.state !== provider.state()) throw new Error("the callback's state does not match this login (a stale or foreign redirect)");
    if (got.error) throw new Error(`the authorization server refused: ${got.error}${got.description ? ` (${got.description})` : ""}`);
    const second = await auth(provider, { serverUrl, authorizationCode: got.code!, scope: o.spec.auth.scope });
    if (second !== "AUTHORIZED") throw new Error("the authorization code was not accepted");
    saveOAuthState(o.home, o.service, provider.loginState(serverUrl));
    return { scope: provider.tokens()?.scope };
  } finally {
    await close();
  }
}

function sameUrl(a: string, b: string): boolean {
  try {
    return new URL(a).href === new URL(b).href;
  } catch {
    return a === b;
  }
}

function withTimeout<T>(p: Promise<T>, ms: number, message: string): Promise<T> {
  let t: NodeJS.Timeout;
  return Promise.race([p, new Promise<T>((_, reject) => (t = setTimeout(() => reject(new Error(message)), ms)))]).finally(() => clearTimeout(t));
}

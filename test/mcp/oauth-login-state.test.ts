// What `svc mcp login` and the running svc leave in the token file (engines/mcp/oauth.ts,
// oauth-store.ts), driven in-process against the loopback authorization server and MCP server of
// oauth-servers.ts:
// - a login under way must not wipe the tokens svc is using (a login the user interrupts, or that
//   times out, keeps them; a refresh svc makes meanwhile is not undone when the login fails);
// - tokens obtained for one MCP endpoint are not sent to another one (the manifest's url changed).
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { auth } from "@modelcontextprotocol/sdk/client/auth.js";
import { tempDir } from "../helpers/svc";
import { approveInBrowser, startOAuthServices } from "./oauth-servers";
import { loadOAuthState } from "../../engines/mcp/oauth-store";
import { runLogin, StoredOAuthProvider } from "../../engines/mcp/oauth";
import { oauthCallbackListener } from "../../api/oauth-callback";
import type { McpServerSpec } from "../../schemas/kinds/mcp-server";

let services: Awaited<ReturnType<typeof startOAuthServices>>;
let home: string;
let spec: McpServerSpec;

beforeAll(async () => {
  services = await startOAuthServices();
  home = await tempDir("svc-mcp-oauth-state-");
  spec = { transport: "http", url: services.mcpUrl, auth: { type: "oauth", grant: "authorization_code" } } as McpServerSpec;
});
afterAll(async () => {
  await services?.close();
});

/** A login whose browser step the test performs (or not) once the URL is shown. */
function startLogin(service: string) {
  let shown!: (url: string) => void;
  const url = new Promise<string>((r) => (shown = r));
  const done = runLogin({ home, service, spec, listen: oauthCallbackListener, print: (u) => shown(u) });
  done.catch(() => undefined);
  return { url, done };
}

/** A login the user approves. */
async function loginOnce(service: string) {
  const l = startLogin(service);
  await approveInBrowser(await l.url);
  await l.done;
}

/** The user answers "Deny" in the browser: the callback gets error=access_denied with the state. */
async function deny(url: string) {
  const u = new URL(url);
  const cb = new URL(u.searchParams.get("redirect_uri")!);
  cb.searchParams.set("error", "access_denied");
  cb.searchParams.set("state", u.searchParams.get("state")!);
  await fetch(cb).then((r) => r.text());
}

describe("svc mcp login and the stored OAuth state", () => {
  it("a login stores the tokens and no PKCE verifier", async () => {
    await loginOnce("first");
    const st = loadOAuthState(home, "first");
    expect(st.tokens?.access_token).toBe(services.provider.issued.at(-1));
    expect(st.tokens?.refresh_token).toBeTruthy();
    expect(st.serverUrl).toBe(services.mcpUrl);
    // the verifier was for that one exchange; it is not kept for anything to reuse
    expect(st.codeVerifier).toBeUndefined();
  });

  it("while a second login waits for the browser, the stored tokens stay (an interrupted login loses nothing)", async () => {
    await loginOnce("second");
    const token = loadOAuthState(home, "second").tokens?.access_token;
    expect(token).toBeTruthy();
    const l = startLogin("second");
    const url = await l.url;
    // what is on disk now is what survives Ctrl-C / a closed terminal / the running svc reconnecting
    const during = loadOAuthState(home, "second").tokens?.access_token;
    await deny(url);
    await expect(l.done).rejects.toThrow(/access_denied/);
    expect(during).toBe(token);
    expect(loadOAuthState(home, "second").tokens?.access_token).toBe(token);
  });

  it("a refresh the running svc makes during a login that then fails is kept (the rotated refresh token is not put back)", async () => {
    await loginOnce("refreshed");
    const running = new StoredOAuthProvider(home, "refreshed", spec.auth);
    expect(running.hasTokens()).toBe(true);
    const l = startLogin("refreshed");
    const url = await l.url;
    // the service refuses the access token; svc refreshes (the authorization server rotates the refresh token)
    services.provider.expireAccessTokens();
    const refreshesBefore = services.provider.refreshes;
    expect(await auth(running, { serverUrl: services.mcpUrl })).toBe("AUTHORIZED");
    expect(services.provider.refreshes).toBe(refreshesBefore + 1);
    await deny(url);
    await expect(l.done).rejects.toThrow(/access_denied/);
    // svc restarts (a new provider reads the file) and the access token expires again: the refresh
    // token on disk must be the live one
    const afterRestart = new StoredOAuthProvider(home, "refreshed", spec.auth);
    expect(afterRestart.tokens()?.access_token).toBe(services.provider.issued.at(-1));
    services.provider.expireAccessTokens();
    expect(await auth(afterRestart, { serverUrl: services.mcpUrl })).toBe("AUTHORIZED");
    expect(services.provider.refreshes).toBe(refreshesBefore + 2);
  });

  it("tokens obtained for one MCP endpoint are not offered to another (the manifest's url changed)", async () => {
    await loginOnce("moved");
    const same = new StoredOAuthProvider(home, "moved", spec.auth, undefined, services.mcpUrl);
    expect(same.hasTokens()).toBe(true);
    const other = new StoredOAuthProvider(home, "moved", spec.auth, undefined, "http://127.0.0.1:9/elsewhere/mcp");
    expect(other.hasTokens()).toBe(false);
    expect(other.tokens()).toBeUndefined();
    expect(other.clientInformation()).toBeUndefined();
    expect(other.discoveryState()).toBeUndefined();
  });
});

// MCP authorization (OAuth 2.1 authorization code + PKCE, discovery, dynamic client registration)
// end to end: a loopback authorization server (the SDK's mcpAuthRouter) and a protected loopback
// MCP server (requireBearerAuth); `svc mcp login` run as the real command, the browser step done
// by fetching the printed URL and following the redirect to the callback.
import { spawn } from "node:child_process";
import { readFileSync, readdirSync } from "node:fs";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestSvc, tempDir, type TestSvc } from "../helpers/svc";
import { repoRoot } from "../helpers/cli";
import { apply, call, mcpDoc, ready, waitReason } from "./helpers";
import { approveInBrowser, startOAuthServices } from "./oauth-servers";
import { loadOAuthState } from "../../engines/mcp/oauth-store";

let services: Awaited<ReturnType<typeof startOAuthServices>>;
let s: TestSvc;
let home: string;

beforeAll(async () => {
  services = await startOAuthServices();
  home = await tempDir("svc-mcp-oauth-");
  s = await startTestSvc({ home });
}, 60_000);
afterAll(async () => {
  await s?.stop();
  await services?.close();
});

/** `svc mcp login <name>` as a child process; resolves with the URL it prints, then its exit. */
function login(name: string) {
  const child = spawn(process.execPath, [path.join(repoRoot, "bin", "svc.mjs"), "mcp", "login", name, "--home", home, "--port", new URL(s.url).port], {
    cwd: repoRoot,
    env: { ...process.env, NO_COLOR: "1" },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let stdout = "";
  let stderr = "";
  const url = new Promise<string>((resolve, reject) => {
    child.stdout.on("data", (d) => {
      stdout += d;
      const m = /^(http\S+)$/m.exec(stdout);
      if (m) resolve(m[1]);
    });
    child.on("close", () => reject(new Error(`svc mcp login exited without a URL: ${stderr}`)));
  });
  child.stderr.on("data", (d) => (stderr += d));
  const exit = new Promise<{ code: number; stderr: string }>((resolve) => child.on("close", (code) => resolve({ code: code ?? -1, stderr })));
  return { url, exit };
}

describe("McpServer with auth grant authorization_code", () => {
  it("is Ready=False AuthorizationRequired with the command to run until someone logs in", async () => {
    const r = await apply(s, [mcpDoc("hosted", { transport: "http", url: services.mcpUrl, auth: { type: "oauth", grant: "authorization_code" } })]);
    expect(r.status).toBe(200);
    const c = await waitReason(s, "hosted", "AuthorizationRequired");
    expect(c.status).toBe("False");
    expect(c.message).toContain("svc mcp login hosted");
    expect(services.calls()).toBe(0);
  });

  it("svc mcp login prints the URL, completes on the loopback callback, and svc connects with the stored tokens", async () => {
    const l = login("hosted");
    const url = await l.url;
    const u = new URL(url);
    expect(`${u.origin}`).toBe(services.issuer);
    expect(u.searchParams.get("code_challenge_method")).toBe("S256"); // PKCE
    expect(u.searchParams.get("redirect_uri")).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/callback$/);
    const browser = await approveInBrowser(url);
    expect(browser.callbackStatus).toBe(200);
    expect(browser.callbackText).toContain("authorization received");
    const done = await l.exit;
    expect(done.code, done.stderr).toBe(0);
    expect(services.provider.registrations).toBe(1); // dynamic client registration

    await waitReason(s, "hosted", "Connected");
    const r = await call(s, "hosted_whoami", { greeting: "hello" });
    expect(r.json.result.content[0].text).toMatch(/^hello, client /);

    // stored encrypted in the data dir; never in the store, a plan or an export
    const token = services.provider.issued.at(-1)!;
    expect(readdirSync(path.join(home, "mcp-oauth")).sort()).toEqual(["hosted.json.enc", "key"]);
    expect(readFileSync(path.join(home, "mcp-oauth", "hosted.json.enc"), "utf8")).not.toContain(token);
    const exported = await fetch(`${s.url}/admin/config/export?format=json&includeApiOwned=true`).then((x) => x.text());
    expect(exported).toContain("hosted");
    expect(exported).not.toContain(token);
    expect(JSON.stringify(s.svc.store.get("McpServer", "hosted"))).not.toContain(token);
  });

  it("a login the user refuses fails with the server's reason and keeps the tokens svc already has", async () => {
    const l = login("hosted");
    const u = new URL(await l.url);
    const callback = new URL(u.searchParams.get("redirect_uri")!);
    callback.searchParams.set("error", "access_denied");
    callback.searchParams.set("state", u.searchParams.get("state")!);
    const res = await fetch(callback);
    expect(await res.text()).toContain("authorization failed (access_denied)");
    const done = await l.exit;
    expect(done.code).not.toBe(0);
    expect(done.stderr).toContain("the authorization server refused: access_denied");
    // the stored tokens are the ones from the first login (the failed one put them back)
    expect(loadOAuthState(home, "hosted").tokens?.access_token).toBe(services.provider.issued.at(-1));
    const r = await call(s, "hosted_whoami", { greeting: "still" });
    expect(r.json.result?.content?.[0]?.text, JSON.stringify(r.json)).toMatch(/^still, client /);
  });

  it("refreshes an expired access token with the refresh token, without a new login", async () => {
    const before = services.provider.issued.length;
    services.provider.expireAccessTokens();
    const r = await call(s, "hosted_whoami", { greeting: "again" });
    expect(r.json.result?.content?.[0]?.text, JSON.stringify(r.json)).toMatch(/^again, client /);
    expect(services.provider.refreshes).toBe(1);
    expect(services.provider.issued.length).toBe(before + 1);
    expect(ready(s, "hosted")?.reason).toBe("Connected");
  });

  it("reports AuthorizationRequired again when the tokens are revoked", async () => {
    services.provider.revokeAll();
    const r = await call(s, "hosted_whoami", { greeting: "revoked" });
    expect(r.status).toBeGreaterThanOrEqual(400);
    const c = await waitReason(s, "hosted", "AuthorizationRequired");
    expect(c.message).toContain("svc mcp login hosted");
  });
});

// The loopback listener an OAuth authorization server redirects the browser to during `svc mcp
// login` (engines/mcp/oauth.ts runLogin): GET /callback?code=&state= (or ?error=), answered with a
// line the user can read, handed to the login once. It binds 127.0.0.1 only, for one login.
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import type { Callback, OAuthCallback } from "../engines/mcp/oauth";

export async function oauthCallbackListener(port: number): Promise<OAuthCallback> {
  let deliver!: (c: Callback) => void;
  const code = new Promise<Callback>((r) => (deliver = r));
  const server = createServer((req, res) => {
    const u = new URL(req.url ?? "/", "http://127.0.0.1");
    if (u.pathname !== "/callback") {
      res.writeHead(404).end();
      return;
    }
    const q = u.searchParams;
    const c: Callback = { code: q.get("code") ?? undefined, state: q.get("state") ?? undefined, error: q.get("error") ?? undefined, description: q.get("error_description") ?? undefined };
    res.writeHead(200, { "content-type": "text/plain; charset=utf-8" });
    res.end(c.error ? `svc: authorization failed (${c.error}). You can close this window.\n` : "svc: authorization received. You can close this window.\n");
    deliver(c);
  });
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(port, "127.0.0.1", () => resolve());
  });
  return {
    port: (server.address() as AddressInfo).port,
    code,
    close: async () => {
      server.closeAllConnections();
      await new Promise<void>((r) => server.close(() => r()));
    },
  };
}

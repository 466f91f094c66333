// `svc mcp login <server>`: the OAuth authorization-code login of one McpServer (engines/mcp/oauth.ts).
// The McpServer's spec comes from the running svc (loopback admin export); the tokens go to the
// same data dir, encrypted, where the running svc picks them up at once. stdout carries the URL
// to open; progress goes to stderr.
import type { McpServerSpec } from "../schemas/kinds/mcp-server";
import { runLogin, usesAuthorizationCode } from "../engines/mcp/oauth";
import { oauthCallbackListener } from "../api/oauth-callback";
import { admin, errorOf, probe, resolveTarget, type TargetOptions } from "./connect";
import { CliError } from "./errors";

export async function mcpLogin(server: string, o: TargetOptions): Promise<void> {
  const target = await resolveTarget(o);
  const p = await probe(target.base);
  if (!p.ok) throw new CliError(`svc mcp login: svc is not running (no answer at ${target.base}: ${p.error}); start it with \`svc serve\`, or pass --port / set SVC_PORT`);
  const r = await admin(target.base, "GET", "/admin/config/export?format=json&includeApiOwned=true");
  if (r.status !== 200) throw new CliError(`svc mcp login: cannot read the configuration: ${errorOf(r)}`);
  const docs: any[] = Array.isArray(r.json) ? r.json : (r.json?.documents ?? r.json?.items ?? []);
  const doc = docs.find((d) => d?.kind === "McpServer" && d?.metadata?.name === server);
  if (!doc) throw new CliError(`svc mcp login: no McpServer named ${JSON.stringify(server)}`);
  const spec = doc.spec as McpServerSpec;
  if (!usesAuthorizationCode(spec)) throw new CliError(`svc mcp login: McpServer ${server} does not use OAuth login (set auth.type: oauth and auth.grant: authorization_code)`);
  try {
    await runLogin({
      home: target.home,
      service: server,
      spec,
      listen: oauthCallbackListener,
      print: (url) => {
        process.stderr.write(`Open this URL in a browser to authorize svc for ${server}:\n`);
        process.stdout.write(`${url}\n`);
        process.stderr.write("Waiting for the authorization server to redirect back...\n");
      },
    });
  } catch (e) {
    throw new CliError(`svc mcp login: ${(e as Error).message}`);
  }
  process.stderr.write(`Authorized: tokens for ${server} are stored encrypted in ${target.home}/mcp-oauth; svc connects with them now.\n`);
}

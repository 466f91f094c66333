// `svc keys generate`: a new secret and its sha256 hash, for an ApiKey manifest (which carries
// only the hash). `svc keys list` / `svc keys revoke ID`: the running server's key routes, called
// with the administrative key (SVC_ADMIN_KEY, else <home>/admin.key).
import { readFileSync, existsSync } from "node:fs";
import path from "node:path";
import type { Command } from "commander";
import { resolveTarget, probe } from "./connect";
import { CliError } from "./errors";
import { outputFormat, printData, table, withOutputOption } from "./print";

function adminKey(home: string): string {
  if (process.env.SVC_ADMIN_KEY) return process.env.SVC_ADMIN_KEY.trim();
  const f = path.join(home, "admin.key");
  if (existsSync(f)) return readFileSync(f, "utf8").trim();
  throw new CliError(`no administrative key: set SVC_ADMIN_KEY or start svc once (it writes ${f})`);
}

async function call(opts: { port?: string; home?: string }, method: string, p: string): Promise<any> {
  const t = await resolveTarget(opts);
  const pr = await probe(t.base);
  if (!pr.ok) throw new CliError(`no svc answers at ${t.base} (${pr.error}); start it with \`svc serve\``);
  const res = await fetch(t.base + p, { method, headers: { authorization: `Bearer ${adminKey(t.home)}` } });
  const j: any = await res.json().catch(() => null);
  if (!res.ok) throw new CliError(j?.error?.message ?? `svc answered HTTP ${res.status}`);
  return j;
}

export function registerKeys(program: Command): void {
  const keys = program.command("keys").description("API keys: generate a secret and hash for a manifest, list or revoke keys");

  keys
    .command("generate")
    .description("print a new API key secret and its sha256 hash (put only the hash in an ApiKey manifest)")
    .option("--json", "print JSON {api_key, secretHash}")
    .option("--name <name>", "object name for the printed manifest snippet", "my-key")
    .action(async (o: { json?: boolean; name: string }) => {
      const { generateSecret, hashSecret } = await import("../engines/gateway/keys"); // loaded by this command only
      const secret = generateSecret();
      const hash = `sha256:${hashSecret(secret)}`;
      if (o.json) {
        process.stdout.write(JSON.stringify({ api_key: secret, secretHash: hash }, null, 2) + "\n");
        return;
      }
      process.stdout.write(
        `api_key:    ${secret}\nsecretHash: ${hash}\n\n` +
          `The secret is shown once: keep it in a secret store. Manifest:\n\n` +
          `apiVersion: svc/v1\nkind: ApiKey\nmetadata:\n  name: ${o.name}\nspec:\n  key_type: user\n  secretHash: ${hash}\n`,
      );
    });

  withOutputOption(
    keys
      .command("list")
      .description("list keys of the running server (administrative key)")
      .option("--port <port>", "server port")
      .option("--home <dir>", "data dir"),
  ).action(async (o: { port?: string; home?: string; json?: boolean; output?: string }) => {
    const format = outputFormat(o);
    const j = await call(o, "GET", "/v1/api-keys");
    if (await printData(format, j)) return;
    const wide = format === "wide";
    const rows = [["ID", "NAME", "STATUS", "TYPE", "EXPIRES", "OWNER", ...(wide ? ["ORGANIZATION", "TEAM", "USER", "CREATED"] : []), ...(wide ? ["PROBLEM"] : [])]];
    for (const k of j.keys as any[]) {
      // degraded: the key authenticates, but part of it (its webhook) cannot work
      const status = k.degraded ? `${k.status} (degraded: ${k.degraded.reason})` : k.status;
      const more = wide ? [k.organization_id ?? "-", k.team_id ?? "-", k.user_id ?? "-", k.created_at ?? "-", k.degraded?.message ?? "-"] : [];
      rows.push([k.id, k.name ?? "-", status, k.key_type, k.expires_at ?? "never", k.managed_by, ...more]);
    }
    process.stdout.write(table(rows) + "\n");
    const degraded = (j.keys as any[]).filter((k) => k.degraded);
    if (degraded.length && !wide) for (const k of degraded) process.stderr.write(`warning: ${k.id} (${k.name}): ${k.degraded.message}\n`);
  });

  keys
    .command("revoke <id>")
    .description("revoke a key made over HTTP (kept for audit)")
    .option("--port <port>", "server port")
    .option("--home <dir>", "data dir")
    .action(async (id: string, o: { port?: string; home?: string }) => {
      const j = await call(o, "DELETE", `/v1/api-keys/${encodeURIComponent(id)}`);
      process.stdout.write(`${j.id}: ${j.status}\n`);
    });
}

// `svc cache stats` and `svc cache purge [--model M] [--key K]`: the response cache of the
// running server (docs/cache.md), through the loopback-only /admin/response-cache routes.
import type { Command } from "commander";
import { admin, errorOf, probe, resolveTarget } from "./connect";
import { CliError } from "./errors";
import { outputFormat, printData, table, withOutputOption } from "./print";

interface Options {
  port?: string;
  home?: string;
  output?: string;
  json?: boolean;
  model?: string;
  key?: string;
}

async function base(o: Options): Promise<string> {
  const t = await resolveTarget(o);
  const pr = await probe(t.base);
  if (!pr.ok) throw new CliError(`no svc answers at ${t.base} (${pr.error}); start it with \`svc serve\``);
  return t.base;
}

const pct = (x: number) => `${(x * 100).toFixed(1)}%`;

export function registerCache(program: Command): void {
  const cmd = program.command("cache").description("the response cache of the running server: hit rate, spend saved, purge (docs/cache.md)");
  withOutputOption(
    cmd
      .command("stats")
      .description("entries, hits, misses, hit rate and spend saved, per model")
      .option("--port <port>", "server port")
      .option("--home <dir>", "data dir"),
  ).action(async (o: Options) => {
    const format = outputFormat(o);
    const r = await admin(await base(o), "GET", "/admin/response-cache");
    if (r.status !== 200) throw new CliError(errorOf(r));
    if (await printData(format, r.json)) return;
    const s = r.json;
    process.stdout.write(`${s.mode} store: ${s.entries} entries${s.bytes ? `, ${s.bytes} bytes` : ""}; ${s.hits} hits, ${s.misses} misses (${pct(s.hit_rate)}), ${s.bypassed} bypassed; saved $${s.saved_usd.toFixed(6)}\n`);
    if (s.models.length) {
      const rows = [["MODEL", "HITS", "MISSES", "HIT RATE", "SAVED USD"], ...s.models.map((m: any) => [m.model, String(m.hits), String(m.misses), pct(m.hit_rate), m.saved_usd.toFixed(6)])];
      process.stdout.write(table(rows) + "\n");
    }
  });
  cmd
    .command("purge")
    .description("drop cached answers: a model's, a key's (those it stored), or every one")
    .option("--model <name>", "only this model's answers")
    .option("--key <id>", "only answers stored by this key")
    .option("--port <port>", "server port")
    .option("--home <dir>", "data dir")
    .action(async (o: Options) => {
      const r = await admin(await base(o), "POST", "/admin/response-cache/purge", { ...(o.model ? { model: o.model } : {}), ...(o.key ? { key: o.key } : {}) });
      if (r.status !== 200) throw new CliError(errorOf(r));
      process.stdout.write(`purged ${r.json.purged} cached ${r.json.purged === 1 ? "answer" : "answers"}\n`);
    });
}

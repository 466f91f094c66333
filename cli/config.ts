// `svc config export|schema|validate|plan|apply`. Documents are validated locally first (so
// errors name the real file:line:col), then planned by the running server, or offline on the
// store file when no server answers.
import { readFile, writeFile } from "node:fs/promises";
import type { Command } from "commander";
import type { DesiredObject, ManifestIssue, Plan } from "../manifests";
import { admin, connect, errorOf, storeExists, type TargetOptions } from "./connect";
import { withOfflineStore } from "./offline";

// manifests/ pulls in TypeBox and ajv (~0.6 s): load it only in the commands that need it.
const manifests = () => import("../manifests");
import { CliError, EXIT } from "./errors";
import { changeCount, formatIssue, formatPlan, formatWait } from "./print";
import { storeFile } from "../engines/paths";
import type { WaitResult } from "../controllers/runtime";
import type { ReplayReport } from "../engines/gateway/replay";
import { EXIT_NEW_REFUSALS, formatReplay, replayBody, replayOffline, wantsReplay } from "./replay";

const DEFAULT_SOURCE = "default";
const say = (s: string) => process.stdout.write(s + "\n");
const note = (s: string) => process.stderr.write(s + "\n");

export function addTargetOptions(cmd: Command): Command {
  return cmd
    .option("--port <port>", "port of the running svc (default: SVC_PORT, <home>/server.json, 1337)")
    .option("--home <dir>", "data dir (default: SVC_HOME, <SVC_TEST_ROOT>/.svc, ~/.svc)");
}

export function registerConfig(program: Command): void {
  const config = program.command("config").description("declarative configuration: export, schema, validate, plan, apply");

  addTargetOptions(
    config
      .command("export")
      .description("write the current desired state as manifests (no secrets)")
      .option("-o, --output <file>", "write to a file instead of stdout")
      .option("--format <format>", "yaml or json (default: from the file name, else yaml)")
      .option("--include-api-owned", "also export objects made through the HTTP API")
      .option("--show-defaults", "also write fields left at their default (by default only the fields that were set)"),
  ).action(async (o) => {
    const format = pickFormat(o.format, o.output);
    const { target, online, note: how } = await connect(o);
    let text: string;
    if (online) {
      const r = await admin(target.base, "GET", `/admin/config/export?format=${format}${o.includeApiOwned ? "&includeApiOwned=true" : ""}${o.showDefaults ? "&showDefaults=true" : ""}`);
      if (r.status !== 200) throw new CliError(errorOf(r));
      text = r.text;
    } else {
      note(how);
      if (!(await storeExists(target.home))) throw new CliError(`no store at ${storeFile(target.home)}: svc has not run with this data dir`);
      const { exportObjects } = await manifests();
      text = await withOfflineStore(target.home, async (store) => exportObjects(store, { format, includeApiOwned: !!o.includeApiOwned, showDefaults: !!o.showDefaults }));
    }
    await output(text, o.output);
  });

  config
    .command("schema")
    .description("print the JSON Schema of every kind in this build")
    .option("--format <format>", "yaml or json", "yaml")
    .option("-o, --output <file>", "write to a file instead of stdout")
    .action(async (o) => {
      const { schemaText } = await manifests();
      await output(schemaText(pickFormat(o.format, undefined)), o.output);
    });

  config
    .command("validate")
    .description("check manifests offline (no server): every problem with file:line:col")
    .argument("<paths...>", "files, folders, or - for stdin")
    .action(async (paths: string[]) => {
      const { loadPaths } = await manifests();
      const r = await loadPaths(paths);
      printIssues(r.issues);
      const errors = r.issues.filter((i) => i.severity === "error").length;
      if (errors) throw new CliError(`${errors} ${errors === 1 ? "error" : "errors"}; the documents are not valid`);
      say(`${r.objects.length} ${r.objects.length === 1 ? "object" : "objects"} valid`);
    });

  addTargetOptions(
    config
      .command("plan")
      .description("validate documents and show what apply would change")
      .argument("<paths...>", "files, folders, or - for stdin")
      .option("-o, --output <file>", "save the plan as JSON (apply it later with `svc config apply plan.json`); `-o json` prints the plan (and replay) as JSON instead")
      .option("--detailed-exitcode", `exit 2 when there are changes, 0 when there are none, ${EXIT_NEW_REFUSALS} when --replay finds newly refused requests`)
      .option("--replay <window>", "replay the audit entries of this window (24h, 7d; ending now) through the proposed state")
      .option("--from <time>", "replay from this UTC time (2026-11-27T00:00:00Z or 2026-11-27)")
      .option("--to <time>", "replay up to this UTC time (default: now)")
      .option("--prune", "also delete objects of this source (of the declared kinds) that the documents no longer declare")
      .option("--allow-prune-all", "let --prune delete every object of the source")
      .option("--source <name>", "the documents' source: objects are owned by config:<source>", DEFAULT_SOURCE),
  ).action(async (paths: string[], o) => {
    const { objects, warnings } = await loadValid(paths);
    const { target, online, note: how } = await connect(o);
    let plan: Plan;
    let replay: ReplayReport | undefined;
    const json = o.output === "json";
    if (online) {
      const r = await admin(target.base, "POST", "/admin/config/plan", { documents: toDocuments(objects), source: o.source, prune: !!o.prune, allowPruneAll: !!o.allowPruneAll, ...replayBody(o) });
      if (r.status !== 200) throw await serverError(r, objects);
      plan = { ...r.json.plan, warnings: mergeWarnings(warnings, r.json.plan.warnings ?? [], objects) };
      replay = r.json.replay;
    } else {
      note(how);
      const { makePlan } = await manifests();
      ({ plan, replay } = await withOfflineStore(target.home, async (store, db) =>
        mapErrors(objects, async () => {
          const p = makePlan(store, objects, { source: o.source, prune: !!o.prune, allowPruneAll: !!o.allowPruneAll, warnings });
          return { plan: p, replay: wantsReplay(o) ? await replayOffline(store, db, p, o) : undefined };
        }),
      ));
    }
    const exit = replay && replay.totals.newRefusals > 0 ? EXIT_NEW_REFUSALS : changeCount(plan) > 0 ? EXIT.pending : EXIT.ok;
    if (json) {
      say(JSON.stringify(replay ? { plan, replay, exitCode: exit } : { plan, exitCode: exit }, null, 2));
      if (o.detailedExitcode && exit !== EXIT.ok) process.exitCode = exit;
      return;
    }
    say(formatPlan(plan));
    if (replay) say(formatReplay(replay));
    if (o.output) {
      await writeFile(o.output, JSON.stringify(plan, null, 2) + "\n");
      say(`Saved the plan to ${o.output}; apply it with: svc config apply ${o.output}`);
    }
    if (o.detailedExitcode && exit !== EXIT.ok) process.exitCode = exit;
  });

  addTargetOptions(
    config
      .command("apply")
      .description("apply documents (or a saved plan) to svc")
      .argument("<paths...>", "files, folders, - for stdin, or one saved plan.json")
      .option("-y, --yes", "confirm high-risk changes (deletes, MCP endpoints, screen/browser/channel-write grants)")
      .option("--prune", "also delete objects of this source (of the declared kinds) that the documents no longer declare")
      .option("--allow-prune-all", "let --prune delete every object of the source")
      .option("--wait", "wait until changed objects are Ready at their new generation")
      .option("--timeout <seconds>", "how long --wait waits", "60")
      .option("--source <name>", "the documents' source: objects are owned by config:<source>", DEFAULT_SOURCE),
  ).action(async (paths: string[], o) => {
    const saved = await readSavedPlan(paths);
    if (saved && (o.prune || o.allowPruneAll || o.source !== DEFAULT_SOURCE)) {
      note("note: --prune, --allow-prune-all and --source come from the saved plan; the flags are ignored");
    }
    const { objects, warnings } = saved ? { objects: [], warnings: [] } : await loadValid(paths);
    const { target, online, note: how } = await connect(o);
    const timeout = Number(o.timeout);
    if (!Number.isFinite(timeout) || timeout <= 0) throw new CliError(`--timeout: "${o.timeout}" is not a number of seconds`);

    let plan: Plan;
    let revision: number;
    let applied: number;
    let wait: WaitResult | undefined;
    if (online) {
      const body = saved
        ? { plan: saved, confirm: !!o.yes, wait: !!o.wait, waitTimeoutSeconds: timeout }
        : { documents: toDocuments(objects), source: o.source, prune: !!o.prune, allowPruneAll: !!o.allowPruneAll, confirm: !!o.yes, wait: !!o.wait, waitTimeoutSeconds: timeout };
      const r = await admin(target.base, "POST", "/admin/config/apply", body);
      if (r.status !== 200) throw await serverError(r, objects);
      ({ plan, revision, applied, wait } = r.json);
      plan = { ...plan, warnings: mergeWarnings(warnings, plan.warnings ?? [], objects) };
    } else {
      note(how);
      const { makePlan, applyPlan } = await manifests();
      ({ plan, revision, applied } = await withOfflineStore(target.home, (store) =>
        mapErrors(objects, async () => {
          const p = saved ?? makePlan(store, objects, { source: o.source, prune: !!o.prune, allowPruneAll: !!o.allowPruneAll, warnings });
          if (!saved && changeCount(p) === 0) return { plan: p, revision: store.revision, applied: 0 };
          const res = await applyPlan(store, p, { confirm: !!o.yes });
          return { plan: p, revision: res.revision, applied: res.applied };
        }),
      ));
    }
    say(formatPlan(plan, { fields: false }));
    say(applied > 0 ? `Applied ${applied} ${applied === 1 ? "change" : "changes"} (store revision ${revision}).` : `Nothing to apply (store revision ${revision}).`);
    if (o.wait) {
      if (!online) {
        note("--wait: no server is running, so nothing reconciles the objects now; they converge when svc starts");
      } else if (wait) {
        say(formatWait(wait));
        if (!wait.ready) process.exitCode = EXIT.failed;
      }
    }
  });
}

/** Load and validate locally; ManifestError -> its file:line:col lines. The warnings are printed
 * with the plan (which carries them), each once. */
async function loadValid(paths: string[]): Promise<{ objects: DesiredObject[]; warnings: ManifestIssue[] }> {
  const { loadPaths, assertValid, ManifestError } = await manifests();
  const r = await loadPaths(paths);
  try {
    const objects = assertValid(r);
    return { objects, warnings: r.issues };
  } catch (e) {
    if (e instanceof ManifestError) throw new CliError(e.message);
    throw e;
  }
}

function printIssues(issues: ManifestIssue[]): void {
  for (const i of issues) note(formatIssue(i));
}

function toDocuments(objects: DesiredObject[]) {
  return objects.map((o) => ({
    apiVersion: "svc/v1",
    kind: o.kind,
    metadata: { name: o.name, ...(Object.keys(o.labels ?? {}).length ? { labels: o.labels } : {}), ...(o.owner ? { owner: o.owner } : {}) },
    spec: o.spec,
  }));
}

/** Issues about an object sent to the server point into the request; point them back at its file. */
function relocate(issues: ManifestIssue[], objects: DesiredObject[]): ManifestIssue[] {
  return issues.map((i) => {
    const o = i.kind && i.name ? objects.find((x) => x.kind === i.kind && x.name === i.name) : undefined;
    return o ? { ...i, pos: o.pos } : i;
  });
}

/** The plan's warnings with their files: the server re-reads our documents as one <documents>
 * text, so its load warnings are the local ones (kept, with their file:line), and the rest
 * (e.g. an owner change) point at their object's document. */
function mergeWarnings(local: ManifestIssue[], fromServer: ManifestIssue[], objects: DesiredObject[]): ManifestIssue[] {
  const known = (i: ManifestIssue) => local.some((l) => l.kind === i.kind && l.name === i.name && l.path === i.path && l.message === i.message);
  return [...local, ...relocate(fromServer.filter((i) => !known(i)), objects)];
}

async function serverError(r: { status: number; json: any; text: string }, objects: DesiredObject[]): Promise<CliError> {
  const { ManifestError } = await manifests();
  const code = r.json?.error?.code;
  if (code === "invalid_manifest" && Array.isArray(r.json.error.issues)) {
    const issues = relocate(r.json.error.issues, objects);
    return new CliError(new ManifestError(issues).message);
  }
  if (code === "confirmation_required") return new CliError(`${errorOf(r)}\nRe-run with --yes to confirm.`, EXIT.confirm);
  return new CliError(errorOf(r));
}

async function mapErrors<T>(objects: DesiredObject[], f: () => Promise<T>): Promise<T> {
  const { ManifestError, ConfirmationRequiredError, StaleRevisionError, PruneAllRefusedError } = await manifests();
  try {
    return await f();
  } catch (e) {
    if (e instanceof ManifestError) throw new CliError(new ManifestError(relocate(e.issues, objects)).message);
    if (e instanceof ConfirmationRequiredError) throw new CliError(`${e.message}\nRe-run with --yes to confirm.`, EXIT.confirm);
    if (e instanceof StaleRevisionError || e instanceof PruneAllRefusedError) throw new CliError(e.message);
    throw e;
  }
}

/** One argument that is a JSON file holding a saved plan -> the plan; otherwise null. */
async function readSavedPlan(paths: string[]): Promise<Plan | null> {
  if (paths.length !== 1 || !/\.json$/i.test(paths[0])) return null;
  let text: string;
  try {
    text = await readFile(paths[0], "utf8");
  } catch {
    return null; // let the manifest loader report it
  }
  let j: any;
  try {
    j = JSON.parse(text);
  } catch {
    return null;
  }
  if (!j || typeof j !== "object" || Array.isArray(j) || j.format === undefined) return null;
  const { readPlanFile, ManifestError } = await manifests();
  try {
    return readPlanFile(text);
  } catch (e) {
    if (e instanceof ManifestError) throw new CliError(`${paths[0]}: ${e.message}`);
    throw e;
  }
}

function pickFormat(flag: string | undefined, file: string | undefined): "yaml" | "json" {
  const f = flag ?? (file && /\.json$/i.test(file) ? "json" : "yaml");
  if (f !== "yaml" && f !== "json") throw new CliError(`--format: "${f}" is not yaml or json`);
  return f;
}

async function output(text: string, file: string | undefined): Promise<void> {
  if (!file) {
    process.stdout.write(text.endsWith("\n") ? text : text + "\n");
    return;
  }
  await writeFile(file, text);
  note(`wrote ${file}`);
}

// Access policy evaluation (docs/architecture.md "The gate"; docs/gate.md).
//
// A key's statements are: every statement of each AccessPolicy bound by name (spec.policies),
// the statements of its inline `policy` document, and its `permissions.models/actions`
// shorthand as one Allow statement. Evaluation: a matching Deny wins over everything; else a
// matching Allow allows; when statements exist and none matches with Allow, the request is
// denied; a key with no statements at all is allowed (limits still apply).
// A statement matches when its actions include the action (or "*"), one of its resources
// matches (model:<glob>, provider:<glob>, "*"; `*` globs inside names), and its condition
// (if any) holds:
//   not_in [providers]         the serving provider is not one of them
//   time_between {start,end,tz} local time in the IANA zone is in [start, end); wraps midnight
//                               when start > end; start == end means all day
//   monthly_budget_under X      the key's month-to-date spend (USD) < X
//   monthly_budget_over X       the key's month-to-date spend (USD) >= X
import type { PolicyDocument, PolicyStatement } from "../../schemas/kinds/access-policy";
import type { KeyEntry } from "./keys";

/** The gate's actions (engines/gateway/gate.ts): the spec's chat actions, embeddings, and
 * media:<operation>, tools:call, agents:run, agents:dispatch, memory:<operation>. */
export type PolicyAction = "chat:completions" | "chat:stream" | "embeddings" | "models:list" | (string & {});

export interface PolicyRequest {
  action: PolicyAction;
  /** absent for calls not made to a model (tools, memory) */
  model?: string;
  provider?: string;
  /** tool:<name> for tool calls */
  resource?: string;
  /** the key's month-to-date spend in micro-USD */
  monthSpendMicros: number;
  /** ms since epoch (injectable clock) */
  now: number;
}

interface Matcher {
  kind: "any" | "model" | "provider" | "tool";
  exact?: string;
  re?: RegExp;
}

interface CompiledStatement {
  effect: "Allow" | "Deny";
  anyAction: boolean;
  actions: Set<string>;
  /** actions with a `*` inside (media:*, memory:*) */
  actionGlobs: RegExp[];
  resources: Matcher[];
  condition?: PolicyStatement["condition"];
  /** for messages: `policy "name" statement #2` */
  label: string;
}

export type PolicyDecision = { allowed: true } | { allowed: false; message: string };

const globCache = new Map<string, RegExp>();
export function globToRegExp(glob: string): RegExp {
  let re = globCache.get(glob);
  if (!re) {
    re = new RegExp("^" + glob.split("*").map((p) => p.replace(/[.+?^${}()|[\]\\]/g, "\\$&")).join(".*") + "$");
    globCache.set(glob, re);
  }
  return re;
}

export function globMatch(glob: string, value: string): boolean {
  if (glob === "*") return true;
  if (!glob.includes("*")) return glob === value;
  return globToRegExp(glob).test(value);
}

function compileResource(r: string): Matcher {
  if (r === "*") return { kind: "any" };
  const i = r.indexOf(":");
  const kind = r.slice(0, i) as "model" | "provider" | "tool";
  const name = r.slice(i + 1);
  if (name === "*") return { kind };
  return name.includes("*") ? { kind, re: globToRegExp(name) } : { kind, exact: name };
}

function compileStatement(s: PolicyStatement, label: string): CompiledStatement {
  return {
    effect: s.effect,
    anyAction: s.actions.includes("*"),
    actions: new Set(s.actions),
    actionGlobs: s.actions.filter((a) => a !== "*" && a.includes("*")).map(globToRegExp),
    resources: s.resources.map(compileResource),
    condition: s.condition,
    label,
  };
}

const tzFormats = new Map<string, Intl.DateTimeFormat>();
/** Minutes since local midnight in an IANA zone. Throws RangeError on an unknown zone. */
export function minutesInZone(now: number, timeZone: string): number {
  let f = tzFormats.get(timeZone);
  if (!f) {
    f = new Intl.DateTimeFormat("en-GB", { timeZone, hour: "2-digit", minute: "2-digit", hourCycle: "h23" });
    tzFormats.set(timeZone, f);
  }
  let h = 0;
  let m = 0;
  for (const p of f.formatToParts(now)) {
    if (p.type === "hour") h = Number(p.value);
    else if (p.type === "minute") m = Number(p.value);
  }
  return (h % 24) * 60 + m;
}

const hhmm = (s: string) => Number(s.slice(0, 2)) * 60 + Number(s.slice(3, 5));

/** Is `now` inside [start, end) local time of `timezone`? Wraps midnight when start > end. */
export function timeBetween(now: number, start: string, end: string, timezone = "UTC"): boolean {
  const t = minutesInZone(now, timezone);
  const a = hhmm(start);
  const b = hhmm(end);
  if (a === b) return true;
  return a < b ? t >= a && t < b : t >= a || t < b;
}

function conditionHolds(c: NonNullable<PolicyStatement["condition"]>, req: PolicyRequest): boolean {
  if (c.not_in) return req.provider === undefined || !c.not_in.includes(req.provider);
  if (c.time_between) {
    try {
      return timeBetween(req.now, c.time_between.start, c.time_between.end, c.time_between.timezone);
    } catch {
      return false; // unknown zone: the condition never holds (validated by the controller)
    }
  }
  if (c.monthly_budget_under !== undefined) return req.monthSpendMicros < Math.round(c.monthly_budget_under * 1e6);
  if (c.monthly_budget_over !== undefined) return req.monthSpendMicros >= Math.round(c.monthly_budget_over * 1e6);
  return true;
}

function statementMatches(s: CompiledStatement, req: PolicyRequest): boolean {
  if (!s.anyAction && !s.actions.has(req.action) && !s.actionGlobs.some((re) => re.test(req.action))) return false;
  let hit = false;
  for (const r of s.resources) {
    if (r.kind === "any") hit = true;
    else {
      const v = r.kind === "model" ? req.model : r.kind === "provider" ? req.provider : toolOf(req.resource);
      hit = v === undefined ? false : r.exact !== undefined ? r.exact === v : r.re ? r.re.test(v) : true;
    }
    if (hit) break;
  }
  if (!hit) return false;
  return s.condition ? conditionHolds(s.condition, req) : true;
}

const toolOf = (resource: string | undefined) => (resource?.startsWith("tool:") ? resource.slice(5) : undefined);

/** What a request was made on, for messages: model:x (provider:y), or tool:x. */
function target(req: PolicyRequest): string {
  if (req.resource) return req.resource;
  if (req.model === undefined) return req.provider !== undefined ? `provider:${req.provider}` : "*";
  return `model:${req.model} (provider:${req.provider})`;
}

export function evaluate(stmts: CompiledStatement[], req: PolicyRequest): PolicyDecision {
  if (stmts.length === 0) return { allowed: true };
  let allowed = false;
  for (const s of stmts) {
    if (!statementMatches(s, req)) continue;
    if (s.effect === "Deny") return { allowed: false, message: `${s.label} denies ${req.action} on ${target(req)}` };
    allowed = true;
  }
  return allowed ? { allowed: true } : { allowed: false, message: `no policy statement allows ${req.action} on ${target(req)}` };
}

/** Compile a whole document (used for tests and for inline policies). */
export function compileDocument(doc: PolicyDocument, label: string): CompiledStatement[] {
  return doc.statements.map((s, i) => compileStatement(s, `${label} statement #${i + 1} (${s.effect})`));
}

export interface KeyPolicy {
  statements: CompiledStatement[];
  /** names of bound policies that do not exist: the key is refused (fail closed) */
  missing: string[];
}

/** Index of AccessPolicy objects, fed by the AccessPolicy controller; compiles each key's
 * statements once per change. */
export class PolicyIndex {
  private docs = new Map<string, CompiledStatement[]>();
  private version = 0;
  private perKey = new WeakMap<KeyEntry, { version: number; policy: KeyPolicy }>();

  /** Insert or replace a policy (a document without statements is absent). */
  put(name: string, doc: PolicyDocument) {
    if (!Array.isArray(doc?.statements)) this.docs.delete(name);
    else this.docs.set(name, compileDocument(doc, `policy "${name}"`));
    this.version++;
  }

  remove(name: string) {
    this.docs.delete(name);
    this.version++;
  }

  has(name: string): boolean {
    return this.docs.has(name);
  }

  forKey(key: KeyEntry): KeyPolicy {
    const c = this.perKey.get(key);
    if (c && c.version === this.version) return c.policy;
    const statements: CompiledStatement[] = [];
    const missing: string[] = [];
    for (const n of key.spec.policies ?? []) {
      const d = this.docs.get(n);
      if (d) statements.push(...d);
      else missing.push(n);
    }
    if (key.spec.policy) statements.push(...compileDocument(key.spec.policy, "inline policy"));
    const p = key.spec.permissions;
    if (statements.length > 0 && (p?.models || p?.actions)) {
      // shorthand as one Allow statement (only meaningful next to other statements: on its own
      // the pipeline's permission check already enforces it)
      statements.push(
        compileStatement(
          { effect: "Allow", actions: (p.actions as PolicyStatement["actions"]) ?? ["*"], resources: p.models ? p.models.map((m) => `model:${m}`) : ["*"] },
          "permissions",
        ),
      );
    }
    const policy = { statements, missing };
    this.perKey.set(key, { version: this.version, policy });
    return policy;
  }
}

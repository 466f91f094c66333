// The gateway engine: keys, policies, limits, routing, the enforcement pipeline, audit,
// webhooks and alerts, wired once per running svc (start-up calls createGateway; the ApiKey,
// AccessPolicy, Provider and AlertSettings controllers are built from it in controllers/registry.ts).
//
// In-memory indexes (keys, policies, providers/models, alert settings) never read the store: their
// controllers put and remove objects synchronously inside each store write (Controller.project),
// so a change made by apply or by the key routes is in force for the very next request.
import type { Host } from "../host";
import type { ModelPool } from "../inference/pool";
import type { PipelineMetrics } from "./metrics-sink";

/** What the gateway uses of the running svc: its core, the local model pool (the "local"
 * provider) and the request metrics. */
export type GatewayHost = Host & { engines: { pool?: ModelPool; metrics?: { gateway: PipelineMetrics } } };
import type { AlertSettingsSpec } from "../../schemas/kinds/alert-settings";
import type { InferencePipeline } from "./pipeline-types";
import { KeyCache, loadAdminKey, type AuthResult, type KeyEntry } from "./keys";
import { PolicyIndex } from "./policy";
import { Limits } from "./limits";
import { GatewayPipeline } from "./pipeline";
import { Gate } from "./gate";
import { KeyAdmin } from "./key-admin";
import { ProviderRouter } from "../providers/router";
import { closePools } from "../providers/http";
import { resolveSecretRef } from "../providers/credentials";
import { AuditLog, SERVER_BATCH } from "./audit/log";
import { WebhookOutbox } from "./outbox/webhooks";
import { EmailOutbox } from "./outbox/email";
import { Alerts } from "./alerts/alerts";
import { settingsInForce } from "./alerts/settings";
import { openResponseCache, type ResponseCache } from "../cache";

export interface Gateway {
  /** the one gate every keyed route goes through (gate.ts) */
  gate: Gate;
  /** chat, completions, responses, messages, Ollama and embeddings: routing and streaming around the gate */
  pipeline: InferencePipeline & GatewayPipeline;
  keys: KeyCache;
  policies: PolicyIndex;
  limits: Limits;
  router: ProviderRouter;
  admin: KeyAdmin;
  audit: AuditLog;
  outbox: WebhookOutbox;
  /** alert e-mails to budget_alerts.notify_email */
  email: EmailOutbox;
  alerts: Alerts;
  /** the response cache (docs/cache.md): SQLite in the data dir, or Redis in shared mode */
  cache: ResponseCache;
  /** current AlertSettings (defaults when none is applied) */
  alertSettings(): AlertSettingsSpec;
  /** put (spec) or remove (undefined) an AlertSettings object: its controller calls it; the first
   * by name is in force */
  setAlertSettings(name: string, spec: Partial<AlertSettingsSpec> | undefined): void;
  /** authenticate a token without the pipeline (key routes, audit route) */
  authenticate(token: string): AuthResult;
  isAdmin(token: string): boolean;
  /** flush usage counters and audit entries, stop webhook delivery */
  close(): Promise<void>;
}

export interface GatewayOptions {
  /** injectable clock (tests) */
  now?: () => number;
  /** counters flush interval (default 1000 ms) */
  flushMs?: number;
  /** audit flush interval (default 250 ms) */
  auditFlushMs?: number;
  /** webhook delivery poll interval */
  webhookPollMs?: number;
  env?: NodeJS.ProcessEnv;
}

export async function createGateway(svc: GatewayHost, opts: GatewayOptions = {}): Promise<Gateway> {
  const env = opts.env ?? process.env;
  const prisma = svc.db.prisma;
  const store = svc.store;
  const logMsg = (m: string) => svc.log.warn(m);

  const keys = new KeyCache();
  const adminSecret = loadAdminKey(svc.home, env);
  keys.setSpecial("admin", adminSecret);
  if (env.SVC_MASTER_KEY) keys.setSpecial("master", env.SVC_MASTER_KEY.trim());
  const isAdmin = (token: string) => {
    const r = keys.authenticate(token);
    return r.ok && r.key.role === "admin";
  };

  const policies = new PolicyIndex();
  // Counters, rate windows and audit rows are written through the store's repositories (SQLite's
  // or PostgreSQL's, prisma/repos). On SQLite's direct handle write-ahead reservations go there
  // too, and each counters flush drains the audit queue in its transaction (limits/wal.ts).
  const repos = svc.db.repos;
  const limits = new Limits(repos.limits, keys, {
    now: opts.now,
    flushMs: opts.flushMs,
    audit: () => audit,
    writesPaused: () => svc.db.writesPaused?.(),
    exchangeRates: () => svc.server.exchangeRates,
  });
  const { recovered } = await limits.load();
  if (recovered) svc.log.warn(`limits: ${recovered} request(s) in flight at the last stop were counted at their reservations`);
  // the router's log: one warn line per upstream failure, retry and cooldown
  const router = new ProviderRouter(() => svc.engines.pool, { log: svc.log });

  // alert settings (a singleton: the first object by name), fed by the AlertSettings controller
  let settings: AlertSettingsSpec;
  const settingObjects = new Map<string, Partial<AlertSettingsSpec>>();
  const setAlertSettings = (name: string, spec: Partial<AlertSettingsSpec> | undefined) => {
    if (spec) settingObjects.set(name, spec);
    else settingObjects.delete(name);
    settings = settingsInForce(settingObjects);
  };
  setAlertSettings("", undefined);

  const audit = new AuditLog(prisma, repos.audit, { flushMs: opts.auditFlushMs, maxBatch: SERVER_BATCH, log: logMsg, writesPaused: () => svc.db.writesPaused?.() });
  const outbox = new WebhookOutbox(prisma, { resolveSecret: (ref) => resolveSecretRef(ref, env), log: logMsg, pollMs: opts.webhookPollMs });
  outbox.start();
  const email = new EmailOutbox(prisma, {
    smtp: () => settings.smtp,
    recipientOf: (id) => keys.get(id)?.spec.budget_alerts?.notify_email,
    resolveSecret: (ref) => resolveSecretRef(ref, env),
    log: logMsg,
    pollMs: opts.webhookPollMs,
  });
  email.start();
  const alerts = new Alerts({
    outbox,
    email,
    prisma,
    settings: () => settings,
    log: logMsg,
    now: opts.now ? () => new Date(opts.now!()) : undefined,
  });

  const gateOptions = {
    keys,
    policies,
    limits,
    audit,
    alerts,
    metrics: svc.engines.metrics?.gateway,
    allowUnauthenticatedLoopback: () => svc.server.allowUnauthenticatedLoopback !== false,
    now: opts.now,
  };
  const gate = new Gate(gateOptions);
  const cache = await openResponseCache(svc.home, env, (m, extra) => svc.log.warn(m, extra));
  const pipeline = new GatewayPipeline({ ...gateOptions, router, cache }, gate);

  const admin = new KeyAdmin({
    store,
    keys,
    policies,
    limits,
    home: svc.home,
    emit: (k, ev, data) => outbox.emit(k, ev, data),
    now: opts.now,
  });

  let closing: Promise<void> | null = null;
  return {
    gate,
    pipeline,
    keys,
    policies,
    limits,
    router,
    admin,
    audit,
    outbox,
    email,
    alerts,
    cache,
    alertSettings: () => settings,
    setAlertSettings,
    authenticate: (token) => keys.authenticate(token),
    isAdmin,
    close: () =>
      (closing ??= (async () => {
        const errors: unknown[] = [];
        const step = async (f: () => Promise<unknown>) => {
          try {
            await f();
          } catch (e) {
            errors.push(e);
          }
        };
        await step(() => limits.close());
        await step(() => alerts.close());
        await step(() => audit.close());
        await step(() => outbox.close());
        await step(() => email.close());
        await step(() => closePools());
        await step(() => cache.close());
        if (errors.length) svc.log.warn("gateway close: some data could not be flushed", { errors: errors.map((e) => String((e as Error)?.message ?? e)) });
      })()),
  };
}

export type { KeyEntry };

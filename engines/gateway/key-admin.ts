// Key management (POST/GET/PATCH/DELETE /v1/api-keys, POST /v1/api-keys/temporary): the
// engine side; api/routes/keys.ts only parses HTTP and calls these.
//
// Keys made here are ApiKey objects owned by "api", named by an opaque id (key_ + 20 chars of
// [a-z0-9]); their secret is returned once and stored only as sha256. Manifest keys (owner
// config:*) are listed but cannot be changed over HTTP (409).
//
// Rights: the administrative key manages every key (and is a master key); the master key
// (SVC_MASTER_KEY) only creates temporary keys; an organization key with
// permissions.manage_keys creates, lists, reads, patches and revokes team and user keys of its
// own organization; any other key gets 403 permission_denied.
//
// Webhook signing secrets: a `secret` given as a reference (env:NAME, file:/path) is stored as
// given; a secret given in clear is written to <home>/secrets/webhook-<key id> (mode 0600,
// directory 0700) and the object stores only `file:<that path>`, so neither the store, a plan
// nor an export ever holds it in clear. The outbox resolves the reference when signing.
import { mkdirSync, writeFileSync, chmodSync } from "node:fs";
import path from "node:path";
import { ApiKeySpec, inferKeyType, missingHierarchyId, rollupConflictMessage, rollupCurrencyConflict } from "../../schemas/kinds/api-key";
import type { ResourceStore, StoredObject } from "../../prisma/resource-store";
import { SvcError, invalidRequest, notFound } from "../errors";
import { unconvertible, missingRateMessage, type ExchangeRate } from "../../schemas/kinds/currency";
import { checkRange, generateSecret, hashSecret, keyState, newKeyId, type KeyCache, type KeyEntry } from "./keys";
import type { PolicyIndex } from "./policy";
import { minutesInZone } from "./policy";
import type { Limits } from "./limits";
import type { KeyRef, WebhookEventName } from "./key-types";
import { keyRefOf } from "./key-types";
import { refuseReason } from "./webhooks/url-policy";
import type { TSchema } from "@sinclair/typebox";
import { CreateBody, PatchBody, TemporaryBody, SECRET_REF, check, mutable, refuseUnresolvableRefs } from "./key-bodies";
import { utcIso } from "../iso-time";

export { MAX_TEMPORARY_SECONDS } from "./key-bodies";

/** Who calls a management route. */
export type Actor = KeyEntry;

export interface KeyAdminDeps {
  store: ResourceStore;
  keys: KeyCache;
  policies: PolicyIndex;
  limits: Limits;
  home: string;
  emit?: (key: KeyRef, event: WebhookEventName, data: Record<string, unknown>) => void;
  now?: () => number;
}

/** A key as key administration hands it to the API (api/key-json.ts shapes it): the stored
 * object, its cache entry, and what only this call knows (the secret once, usage, expires_in). */
export interface KeyView {
  object: StoredObject;
  entry?: KeyEntry;
  now: number;
  /** the secret, returned once at creation */
  secret?: string;
  usage?: ReturnType<KeyAdminDeps["limits"]["report"]>;
  expiresIn?: number;
}

/** active / revoked / expired of a stored key (its cache entry when there is one). */
export function stateOf(o: StoredObject, now: number, e?: KeyEntry) {
  const s = o.spec as ApiKeySpec;
  return keyState(e ?? ({ revoked: !!s.revoked_at, expiresAtMs: s.expires_at ? Date.parse(s.expires_at) : Infinity } as KeyEntry), now);
}

const denied = (m: string) => new SvcError("forbidden", "permission_denied", m);

export class KeyAdmin {
  private readonly now: () => number;
  constructor(private readonly d: KeyAdminDeps) {
    this.now = d.now ?? Date.now;
  }

  // -- rights ----------------------------------------------------------------------------

  private isOrgManager(a: Actor): boolean {
    return a.role === "key" && a.spec.key_type === "organization" && a.spec.permissions?.manage_keys === true && !!a.spec.organization_id;
  }

  /** May the actor use the management routes at all? */
  assertManager(a: Actor): void {
    if (a.role === "admin" || this.isOrgManager(a)) return;
    if (a.role === "master") throw denied("the master key can only create temporary keys (POST /v1/api-keys/temporary)");
    throw denied("this key cannot manage keys: use the administrative key, or an organization key with permissions.manage_keys");
  }

  /** May the actor see/change this key? */
  private canManage(a: Actor, s: ApiKeySpec): boolean {
    if (a.role === "admin") return true;
    return this.isOrgManager(a) && s.organization_id === a.spec.organization_id && (s.key_type === "team" || s.key_type === "user");
  }

  private target(a: Actor, id: string): StoredObject {
    this.assertManager(a);
    const o = this.d.store.get("ApiKey", id);
    if (!o || o.deleting) throw notFound(`no API key with id ${JSON.stringify(id)}`);
    if (!this.canManage(a, o.spec)) {
      // an organization manager must not learn which ids exist elsewhere
      throw a.role === "admin" ? denied("not allowed") : notFound(`no API key with id ${JSON.stringify(id)}`);
    }
    return o;
  }

  private assertApiOwned(o: StoredObject) {
    if (o.owner !== "api") {
      throw new SvcError("conflict", "conflict", `API key ${o.name} is managed by ${o.owner}; change it in its manifest`);
    }
  }

  // -- validation pieces --------------------------------------------------------------------

  /** `name`: the key's own id when it exists (a PATCH), so it is not compared with itself. */
  private validateSemantics(spec: Record<string, any>, a: Actor, name = "") {
    for (const a of spec.ip_allowlist?.addresses ?? []) {
      try {
        checkRange(a);
      } catch (e: any) {
        throw invalidRequest(`invalid ip_allowlist.addresses: ${e.message}`, "ip_allowlist.addresses");
      }
    }
    if (spec.webhook) {
      // internal receivers only for the administrator (or a URL the administrator named)
      const why = refuseReason(spec.webhook.url, { internal: a.role === "admin" || spec.webhook_internal === true });
      if (why) throw invalidRequest(`invalid webhook.url: ${why}`, "webhook.url");
    }
    for (const n of spec.policies ?? []) {
      if (!this.d.policies.has(n)) throw invalidRequest(`invalid policies: access policy ${JSON.stringify(n)} does not exist`, "policies");
    }
    if (spec.budget_limits) {
      // spend is converted from each priced Provider's currency: a pair without a rate is refused
      const budget = spec.budget_limits.currency ?? "USD";
      const rates = (this.d.store.list({ kind: "Server" })[0]?.spec as { exchangeRates?: ExchangeRate[] } | undefined)?.exchangeRates;
      const gap = unconvertible(budget, this.d.store.list({ kind: "Provider" }), rates);
      if (gap) throw invalidRequest(`invalid budget_limits.currency: ${missingRateMessage(budget, gap.price, gap.provider)}`, "budget_limits.currency");
    }
    const clash = rollupCurrencyConflict({ name, spec }, this.d.store.list({ kind: "ApiKey" }));
    if (clash) throw invalidRequest(`invalid budget_limits.currency: this key ${rollupConflictMessage(spec.budget_limits?.currency ?? "USD", clash)}`, "budget_limits.currency");
    for (const st of spec.policy?.statements ?? []) {
      const tz = st.condition?.time_between?.timezone;
      if (tz) {
        try {
          minutesInZone(0, tz);
        } catch {
          throw invalidRequest(`invalid policy: unknown time zone ${JSON.stringify(tz)}`, "policy");
        }
      }
    }
    if (spec.expires_at && Date.parse(spec.expires_at) <= this.now()) {
      throw invalidRequest("invalid expires_at: must be in the future (omit it or send null for a key that never expires)", "expires_at");
    }
  }

  /** Store a clear webhook secret out of the store; return the reference to keep. */
  private secretRef(id: string, secret: string | undefined): string | undefined {
    if (secret === undefined || SECRET_REF.test(secret)) return secret;
    const dir = path.join(this.d.home, "secrets");
    mkdirSync(dir, { recursive: true, mode: 0o700 });
    const file = path.join(dir, `webhook-${id}`);
    writeFileSync(file, secret, { mode: 0o600 });
    chmodSync(file, 0o600);
    return `file:${file}`;
  }

  private async put(id: string, spec: Record<string, unknown>): Promise<StoredObject> {
    const clean = JSON.parse(JSON.stringify(spec)); // drop undefined
    await this.d.store.write([{ op: "upsert", kind: "ApiKey", name: id, owner: "api", spec: clean }]);
    return this.d.store.get("ApiKey", id)!;
  }

  private emit(o: StoredObject, event: WebhookEventName, data: Record<string, unknown>) {
    const e = this.d.keys.get(o.name);
    const ref: KeyRef = e ? e.ref : keyRefOf({ id: o.name, name: o.spec.name ?? o.name, owner: o.owner, spec: o.spec, hash: "", createdAt: o.createdAt });
    this.d.emit?.(ref, event, data);
  }

  // -- operations ---------------------------------------------------------------------------

  async create(a: Actor, body: any): Promise<KeyView> {
    this.assertManager(a);
    check(CreateBody, body);
    refuseUnresolvableRefs(body);
    // key_type omitted: the most specific hierarchy id named (schemas/kinds/api-key.ts)
    const keyType = body.key_type ?? inferKeyType(body);
    if (a.role !== "admin") {
      if (keyType === "organization") throw denied("an organization key can create only team and user keys");
      if (body.organization_id !== undefined && body.organization_id !== a.spec.organization_id) {
        throw denied(`an organization key can create keys only in its own organization (${a.spec.organization_id})`);
      }
      body.organization_id = a.spec.organization_id;
    }
    this.validateSemantics({ ...body, key_type: keyType }, a);
    const missing = missingHierarchyId({ ...body, key_type: keyType });
    if (missing) throw invalidRequest(`invalid ${missing.field}: ${missing.message}`, missing.field);

    const id = newKeyId();
    const secret = generateSecret();
    const spec: Record<string, unknown> = {
      name: body.name,
      description: body.description,
      key_type: keyType,
      organization_id: body.organization_id,
      team_id: body.team_id,
      user_id: body.user_id,
      permissions: body.permissions,
      access_level: body.access_level,
      scopes: body.scopes,
      audience: body.audience,
      policies: body.policies,
      policy: body.policy,
      rate_limits: body.rate_limits,
      budget_limits: body.budget_limits,
      budget_alerts: body.budget_alerts,
      token_limits: body.token_limits,
      expires_at: body.expires_at ? utcIso(body.expires_at) : undefined,
      ip_allowlist: body.ip_allowlist,
      webhook: body.webhook ? { ...body.webhook, secret: this.secretRef(id, body.webhook.secret) } : undefined,
      webhook_internal: body.webhook && a.role === "admin" ? true : undefined,
      metadata: body.metadata,
      secretHash: `sha256:${hashSecret(secret)}`,
    };
    check(ApiKeySpec, JSON.parse(JSON.stringify(spec)));
    const o = await this.put(id, spec);
    this.emit(o, "key.created", { key_type: keyType, created_by: a.id });
    return this.view(o, { secret });
  }

  async createTemporary(a: Actor, body: any): Promise<KeyView> {
    if (a.role !== "admin" && a.role !== "master") throw denied("temporary keys are created with the master key (or the administrative key)");
    check(TemporaryBody, body);
    const now = this.now();
    const id = newKeyId("tmp_");
    const secret = generateSecret();
    const expires = new Date(now + body.expires_in * 1000).toISOString();
    const spec: Record<string, unknown> = {
      name: body.name ?? `temporary ${id}`,
      description: body.description,
      key_type: "temporary",
      permissions: body.permissions,
      expires_at: expires,
      metadata: body.metadata,
      secretHash: `sha256:${hashSecret(secret)}`,
    };
    const o = await this.put(id, spec);
    return this.view(o, { secret, expiresIn: body.expires_in });
  }

  list(a: Actor, q: { status?: string; key_type?: string; organization_id?: string; team_id?: string; user_id?: string }): KeyView[] {
    this.assertManager(a);
    const now = this.now();
    const out: KeyView[] = [];
    const objs = this.d.store.list({ kind: "ApiKey" }).sort((x, y) => (x.createdAt < y.createdAt ? -1 : x.createdAt > y.createdAt ? 1 : x.name < y.name ? -1 : 1));
    for (const o of objs) {
      const s = o.spec as ApiKeySpec;
      if (!this.canManage(a, s)) continue;
      if (q.key_type && (s.key_type ?? "user") !== q.key_type) continue;
      if (q.organization_id && s.organization_id !== q.organization_id) continue;
      if (q.team_id && s.team_id !== q.team_id) continue;
      if (q.user_id && s.user_id !== q.user_id) continue;
      const entry = this.d.keys.get(o.name);
      if (q.status && stateOf(o, now, entry) !== q.status) continue;
      out.push({ object: o, entry, now });
    }
    return out;
  }

  get(a: Actor, id: string): KeyView {
    const o = this.target(a, id);
    return this.view(o, { usage: this.d.limits.report(id, o.spec.budget_limits?.currency ?? "USD") });
  }

  private view(o: StoredObject, extra: Partial<KeyView> = {}): KeyView {
    return { object: o, entry: this.d.keys.get(o.name), now: this.now(), ...extra };
  }

  async patch(a: Actor, id: string, body: any): Promise<KeyView> {
    const o = this.target(a, id);
    this.assertApiOwned(o);
    check(PatchBody, body);
    refuseUnresolvableRefs(body);
    const cur = o.spec as ApiKeySpec;
    if (cur.revoked_at) throw new SvcError("conflict", "conflict", `API key ${id} is revoked; create a new key instead`);
    const next: Record<string, any> = JSON.parse(JSON.stringify(cur));
    for (const [k, v] of Object.entries(body)) {
      const piece = (mutable as Record<string, TSchema>)[k];
      if (v === null) delete next[k];
      else if (isMergeable(k) && isObj(v) && isObj(next[k])) next[k] = mergePatch(next[k], v);
      else next[k] = v;
      if (next[k] !== undefined) check(piece, next[k], k);
    }
    if (typeof next.expires_at === "string") next.expires_at = utcIso(next.expires_at);
    if ("webhook" in body && next.webhook) {
      if (body.webhook && typeof body.webhook.secret === "string") next.webhook.secret = this.secretRef(id, body.webhook.secret);
    }
    if (a.role !== "admin" && next.permissions?.manage_keys) throw denied("an organization key cannot grant manage_keys");
    // who named the webhook URL decides whether it may reach internal receivers
    if (!next.webhook || (a.role !== "admin" && next.webhook.url !== cur.webhook?.url)) delete next.webhook_internal;
    else if (a.role === "admin" && typeof body.webhook?.url === "string") next.webhook_internal = true;
    this.validateSemantics({ ...next, expires_at: "expires_at" in body ? next.expires_at : undefined }, a, id);
    check(ApiKeySpec, JSON.parse(JSON.stringify(next)));
    const saved = await this.put(id, next);
    return this.view(saved);
  }

  async revoke(a: Actor, id: string): Promise<KeyView> {
    const o = this.target(a, id);
    this.assertApiOwned(o);
    if (o.spec.revoked_at) return this.view(o);
    const saved = await this.put(id, { ...o.spec, revoked_at: new Date(this.now()).toISOString() });
    this.d.limits.forget(id);
    this.emit(saved, "key.revoked", { revoked_by: a.id });
    return this.view(saved);
  }
}

const MERGEABLE = new Set(["permissions", "rate_limits", "budget_limits", "budget_alerts", "token_limits", "ip_allowlist", "webhook", "metadata"]);
const isMergeable = (k: string) => MERGEABLE.has(k);
const isObj = (v: unknown): v is Record<string, unknown> => v !== null && typeof v === "object" && !Array.isArray(v);

/** RFC 7396 JSON merge patch. */
export function mergePatch(target: Record<string, unknown>, patch: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = { ...target };
  for (const [k, v] of Object.entries(patch)) {
    if (v === null) delete out[k];
    else if (isObj(v) && isObj(out[k])) out[k] = mergePatch(out[k] as Record<string, unknown>, v);
    else out[k] = v;
  }
  return out;
}

// API keys on the hot path: secret format, hashing, and the in-memory key cache.
//
// Secrets are `sk-svc-` + 32 random bytes in base62. Only sha256(secret) is stored (ApiKey
// spec.secretHash = "sha256:<hex>"). A request's token is hashed once and looked up in a Map
// keyed by that hash; the stored hash is then compared with timingSafeEqual. The ApiKey
// controller puts and removes keys (its projection runs synchronously inside the store write),
// so a revocation or a PATCH is effective on the very next request; expiry is a timestamp
// compared on every request. The cache itself never reads the store.
import { createHash, hash, randomBytes, timingSafeEqual } from "node:crypto";
import { existsSync, readFileSync, writeFileSync, mkdirSync, chmodSync } from "node:fs";
import path from "node:path";
import ipaddr from "ipaddr.js";
import { parseIp } from "../loopback-address";
import type { ApiKeySpec } from "../../schemas/kinds/api-key";
import type { StoredObject } from "../../prisma/resource-store";
import { rememberSecret } from "../providers/redact";
import { ALL_SCOPES, DEFAULT_SCOPES, scopeBits } from "./scopes";
import { keyRefOf, type KeyRecord, type KeyRef, type KeyState } from "./key-types";

export const SECRET_PREFIX = "sk-svc-";
const B62 = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";
const B36 = "0123456789abcdefghijklmnopqrstuvwxyz";

/** base62 of bytes, fixed width for a given length (43 chars for 32 bytes). */
export function base62(bytes: Uint8Array): string {
  let n = BigInt("0x" + (Buffer.from(bytes).toString("hex") || "0"));
  const width = Math.ceil((bytes.length * 8) / Math.log2(62));
  let out = "";
  while (n > 0n) {
    out = B62[Number(n % 62n)] + out;
    n /= 62n;
  }
  return out.padStart(width, "0");
}

/** A new secret: sk-svc- + 32 random bytes base62. */
export function generateSecret(): string {
  return SECRET_PREFIX + base62(randomBytes(32));
}

/** sha256 hex of a secret. */
export function hashSecret(secret: string): string {
  // one-shot crypto.hash (Node >= 20.12) skips building a Hash object; same digest
  return typeof hash === "function" ? hash("sha256", secret, "hex") : createHash("sha256").update(secret).digest("hex");
}

/** Opaque key id, valid as an object name: key_ + 20 chars of [a-z0-9]. */
export function newKeyId(prefix = "key_"): string {
  const b = randomBytes(20);
  let s = prefix;
  for (let i = 0; i < 20; i++) s += B36[b[i] % 36];
  return s;
}

/** Short, non-secret fingerprint of a token for logs and failed-auth alerts. */
export function tokenPrefix(token: string): string {
  return token.length <= 12 ? token.slice(0, 4) + "…" : token.slice(0, 11) + "…";
}

export type KeyRole = "admin" | "master" | "key";

/** A parsed IP allowlist entry. */
type Range = [ipaddr.IPv4 | ipaddr.IPv6, number];

/** What the hot path needs about a key, derived once per store change. */
export interface KeyEntry extends KeyRecord {
  role: KeyRole;
  ref: KeyRef;
  /** ms since epoch; Infinity when the key never expires */
  expiresAtMs: number;
  revoked: boolean;
  /** null: no allowlist in force */
  ipRanges: Range[] | null;
  /** scopes as bits (engines/gateway/scopes.ts); keys without a list get DEFAULT_SCOPES */
  scopeBits: number;
}

export function parseRange(s: string): Range {
  const t = s.trim();
  if (t.includes("/")) return ipaddr.parseCIDR(t) as Range;
  const ip = ipaddr.parse(t);
  return [ip, ip.kind() === "ipv4" ? 32 : 128];
}

/** Throws with a clear message when an allowlist entry is neither an IP nor a CIDR range. */
export function checkRange(s: string): void {
  try {
    parseRange(s);
  } catch {
    throw new Error(`"${s}" is not an IP address or CIDR range`);
  }
}

/** Does ip fall in one of the ranges? IPv4-mapped IPv6 addresses are matched as IPv4. */
export function ipAllowed(ip: string, ranges: Range[]): boolean {
  const addr = parseIp(ip); // IPv4-mapped already unwrapped
  if (!addr) return false;
  for (const [net, bits] of ranges) {
    let a = addr;
    if (net.kind() !== a.kind()) {
      // an IPv4 range never matches a v6 address and vice versa, except v4-mapped networks
      if (net.kind() === "ipv6" && (net as ipaddr.IPv6).isIPv4MappedAddress() && a.kind() === "ipv4") {
        a = (a as ipaddr.IPv4).toIPv4MappedAddress();
      } else continue;
    }
    if ((a as any).match(net, bits)) return true;
  }
  return false;
}

export function keyState(k: KeyEntry, now = Date.now()): KeyState {
  if (k.revoked) return "revoked";
  if (now >= k.expiresAtMs) return "expired";
  return "active";
}

export function entryFromObject(o: StoredObject): KeyEntry | null {
  const spec = o.spec as ApiKeySpec;
  const m = /^sha256:([0-9a-f]{64})$/.exec(spec?.secretHash ?? "");
  if (!m) return null;
  const rec: KeyRecord = { id: o.name, name: spec.name ?? o.name, owner: o.owner, spec, hash: m[1], createdAt: o.createdAt };
  let ipRanges: Range[] | null = null;
  if (spec.ip_allowlist && spec.ip_allowlist.enabled !== false) {
    ipRanges = [];
    for (const a of spec.ip_allowlist.addresses ?? []) {
      try {
        ipRanges.push(parseRange(a));
      } catch {
        /* an unparsable entry allows nothing (validated at create; manifests are validated too) */
      }
    }
  }
  const exp = spec.expires_at ? Date.parse(spec.expires_at) : NaN;
  return {
    ...rec,
    role: "key",
    ref: keyRefOf(rec),
    expiresAtMs: Number.isFinite(exp) ? exp : Infinity,
    revoked: !!spec.revoked_at,
    ipRanges,
    scopeBits: scopeBits(spec.scopes),
  };
}

function specialEntry(id: "admin" | "master", secretHash: string): KeyEntry {
  // role decides what it may do; it belongs to no organization and has no limits
  const spec = { key_type: "user", secretHash: `sha256:${secretHash}` } as ApiKeySpec;
  const rec: KeyRecord = { id, name: id === "admin" ? "admin key" : "master key", owner: "env", spec, hash: secretHash, createdAt: new Date(0).toISOString() };
  return { ...rec, role: id, ref: { id, name: rec.name }, expiresAtMs: Infinity, revoked: false, ipRanges: null, scopeBits: id === "admin" ? ALL_SCOPES : DEFAULT_SCOPES };
}

export type AuthResult = { ok: true; key: KeyEntry } | { ok: false; code: "invalid_api_key" | "key_revoked" | "key_expired"; key?: KeyEntry };

/** The 401 message for each authentication failure (never echoes the key). */
export const AUTH_MESSAGES = {
  invalid_api_key: "invalid API key",
  key_revoked: "this API key has been revoked",
  key_expired: "this API key has expired",
} as const;

/**
 * The key cache: every ApiKey object of the store (manifest or API made) plus the admin and
 * master keys, by hash and by id. Fed by the ApiKey controller (controllers/kinds/api-key.ts).
 */
export class KeyCache {
  private byHash = new Map<string, KeyEntry>();
  private byId = new Map<string, KeyEntry>();
  private special = new Map<string, KeyEntry>();
  /** members by organization / team, for roll-up of team and organization limits */
  private orgKeys = new Map<string, KeyEntry[]>();
  private teamKeys = new Map<string, KeyEntry[]>();
  private indexDirty = true;

  setSpecial(id: "admin" | "master", secret: string | undefined) {
    for (const [h, e] of this.special) if (e.id === id) this.special.delete(h);
    if (secret) {
      rememberSecret(secret); // never echoed in an error or a log line
      const h = hashSecret(secret);
      this.special.set(h, specialEntry(id, h));
    }
  }

  /** Insert or refresh one key from its stored object (idempotent). Null when its secretHash is
   * not sha256:<64 hex> (the key is then absent). */
  put(o: StoredObject): KeyEntry | null {
    const e = entryFromObject(o);
    this.remove(o.name);
    if (!e) return null;
    this.byId.set(e.id, e);
    // two objects with the same hash: the first one wins the lookup (apply validation warns)
    if (!this.byHash.has(e.hash)) this.byHash.set(e.hash, e);
    this.indexDirty = true;
    return e;
  }

  remove(id: string) {
    const old = this.byId.get(id);
    if (!old) return;
    this.byId.delete(id);
    if (this.byHash.get(old.hash) === old) {
      this.byHash.delete(old.hash);
      // another object with that hash takes over
      for (const e of this.byId.values()) if (e.hash === old.hash) {
        this.byHash.set(e.hash, e);
        break;
      }
    }
    this.indexDirty = true;
  }

  get(id: string): KeyEntry | undefined {
    return this.byId.get(id);
  }

  /** The admin or master key's entry (loopback administration is audited under the admin key). */
  getSpecial(id: "admin" | "master"): KeyEntry | undefined {
    for (const e of this.special.values()) if (e.id === id) return e;
    return undefined;
  }

  all(): KeyEntry[] {
    return [...this.byId.values()];
  }

  /** Authenticate a raw token. Constant-time comparison of the stored hash. */
  authenticate(token: string, now = Date.now()): AuthResult {
    const h = hashSecret(token);
    const e = this.special.get(h) ?? this.byHash.get(h);
    if (!e || !timingSafeEqual(Buffer.from(e.hash, "hex"), Buffer.from(h, "hex"))) return { ok: false, code: "invalid_api_key" };
    if (e.revoked) return { ok: false, code: "key_revoked", key: e };
    if (now >= e.expiresAtMs) return { ok: false, code: "key_expired", key: e };
    return { ok: true, key: e };
  }

  private rebuildIndex() {
    this.orgKeys.clear();
    this.teamKeys.clear();
    for (const e of this.byId.values()) {
      const s = e.spec;
      if (s.key_type === "organization" && s.organization_id) push(this.orgKeys, s.organization_id, e);
      if (s.key_type === "team" && s.team_id) push(this.teamKeys, teamKey(s.organization_id, s.team_id), e);
    }
    this.indexDirty = false;
  }

  /** Active organization keys of an organization (their limits apply to member keys). */
  orgKeysOf(orgId: string): KeyEntry[] {
    if (this.indexDirty) this.rebuildIndex();
    return this.orgKeys.get(orgId) ?? [];
  }

  /** Active team keys of a member key's team (none without a team): the lookup string is made
   * once per key entry, not on every request. */
  teamKeysOfMember(k: KeyEntry): KeyEntry[] {
    if (!k.spec.team_id) return [];
    if (this.indexDirty) this.rebuildIndex();
    return this.teamKeys.get(usageIdsOf(k).teamKey!) ?? [];
  }
}

export const teamKey = (org: string | undefined, team: string) => `${org ?? ""}/${team}`;

/** The usage entities a key counts toward, by id (limits/rollup.ts): made once per key entry
 * (an entry is replaced, never changed, when its ApiKey changes), so the per-request lookups
 * reuse strings whose hash is already computed. */
export interface UsageIds {
  /** "team:<org>/<team>" for a team or user key in a team */
  team?: string;
  /** "org:<org>" for a key in an organization */
  org?: string;
  /** teamKey(org, team) when the key has a team */
  teamKey?: string;
}
const usageIds = new WeakMap<KeyEntry, UsageIds>();

export function usageIdsOf(k: KeyEntry): UsageIds {
  let ids = usageIds.get(k);
  if (!ids) {
    const s = k.spec;
    const tk = s.team_id ? teamKey(s.organization_id, s.team_id) : undefined;
    ids = {
      team: tk !== undefined && (s.key_type === "team" || s.key_type === "user") ? "team:" + tk : undefined,
      org: s.organization_id ? "org:" + s.organization_id : undefined,
      teamKey: tk,
    };
    usageIds.set(k, ids);
  }
  return ids;
}

function push<K, V>(m: Map<K, V[]>, k: K, v: V) {
  const a = m.get(k);
  if (a) a.push(v);
  else m.set(k, [v]);
}

/**
 * The administrative key: SVC_ADMIN_KEY, else `<home>/admin.key` (0600), generated on first
 * start and printed once to stderr.
 */
export function loadAdminKey(home: string, env = process.env, print: (s: string) => void = (s) => process.stderr.write(s)): string {
  if (env.SVC_ADMIN_KEY) return env.SVC_ADMIN_KEY.trim();
  const file = path.join(home, "admin.key");
  if (existsSync(file)) return readFileSync(file, "utf8").trim();
  mkdirSync(home, { recursive: true });
  const secret = generateSecret();
  writeFileSync(file, secret + "\n", { mode: 0o600, flag: "wx" });
  chmodSync(file, 0o600);
  print(`svc: generated the administrative API key (shown once; also in ${file}, mode 0600):\n  ${secret}\n`);
  return secret;
}

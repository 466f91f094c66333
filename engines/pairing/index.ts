// Pairing: a device proves nothing but holds an X25519 key; the host approves it (svc pair
// approve, a one-time code, or a signed invite) and the device receives an sk-svc key sealed to
// its public key, with the transcript signed by the server's Ed25519 identity.
//
// Durable: the identity (identity.key), used invites, and paired devices, which are ApiKey
// objects (owner "api", metadata.paired_device) in the store, so unpairing is a key revocation
// and a restart keeps every pairing. Short-lived, in memory (or in Redis when replicas share it,
// engines/pairing/kv.ts): challenges (2 min), pending requests (5 min), codes (5 min), sessions.
import { randomBytes } from "node:crypto";
import path from "node:path";
import type { ResourceStore, StoredObject } from "../../prisma/resource-store";
import type { ApiKeySpec } from "../../schemas/kinds/api-key";
import { SvcError } from "../errors";
import { generateSecret, hashSecret, newKeyId } from "../gateway/keys";
import { isScope } from "../gateway/scopes";
import { b64u, sealTo, x25519Public, type Sealed } from "./crypto";
import { loadIdentity, type Identity } from "./identity";
import { PairingCodes } from "./codes";
import { Invites, type InvitePayload } from "./invites";
import { SecureSessions } from "./channel";
import { MemoryKv, sharedPairingKv, type PairKv } from "./kv";

export const CHALLENGE_TTL_MS = 2 * 60_000;
export const REQUEST_TTL_MS = 5 * 60_000;
/** What a paired device may do unless the host says otherwise: everything but owner. */
export const DEVICE_SCOPES = ["inference", "tools", "agents:run", "agents:dispatch", "memory"];

export interface PairResult {
  device_id: string;
  name: string;
  scopes: string[];
  server: { id: string; public_key: string };
  sealed_key: Sealed & { epk: string };
  /** Ed25519 over pairTranscript(...) */
  signature: string;
}

export interface DeviceView {
  device_id: string;
  name: string;
  public_key: string;
  scopes: string[];
  paired_at: string;
  via: string;
  ip?: string;
}

interface PendingRequest {
  id: string;
  name: string;
  publicKey: string;
  ip: string;
  expiresMs: number;
  status: "pending" | "approved" | "denied";
  result?: PairResult;
}

/** The text the server signs for a pairing; the device recomputes and verifies it. */
export function pairTranscript(serverId: string, deviceId: string, devicePublic: string, s: Sealed & { epk: string }): string {
  return ["svc-pair-v1", serverId, deviceId, devicePublic, s.epk, s.nonce, s.ciphertext].join("|");
}
export const sealAad = (deviceId: string) => `svc-pair-v1|${deviceId}`;

export function checkScopes(v: unknown, field = "scopes"): string[] | undefined {
  if (v === undefined || v === null) return undefined;
  if (!Array.isArray(v) || !v.every((s) => typeof s === "string" && isScope(s))) {
    throw new SvcError("invalid", "invalid_request", `${field} must be a list of: inference, tools, agents:run, agents:dispatch, memory, owner`, field);
  }
  return [...new Set(v as string[])];
}

function checkName(v: unknown): string {
  if (v === undefined || v === null || v === "") return "device";
  if (typeof v !== "string" || v.length > 100) throw new SvcError("invalid", "invalid_request", "name must be a string of at most 100 characters", "name");
  return v;
}

export function checkPublicKey(v: unknown, field = "public_key"): string {
  try {
    x25519Public(v as string);
    return v as string;
  } catch {
    throw new SvcError("invalid", "invalid_request", `${field} must be the device's X25519 public key: base64url of 32 raw bytes`, field);
  }
}

export class Pairing {
  readonly identity: Identity;
  readonly codes: PairingCodes;
  readonly invites: Invites;
  readonly sessions: SecureSessions;
  private readonly kv: PairKv;

  constructor(private readonly store: ResourceStore, home: string, private readonly now: () => number = Date.now, env: NodeJS.ProcessEnv = process.env) {
    const dir = path.join(home, "pairing");
    this.kv = sharedPairingKv.get(store) ?? new MemoryKv(now);
    // replicas sharing pairing state must also share the identity the devices pin
    const file = env.SVC_PAIRING_IDENTITY_FILE?.trim();
    this.identity = loadIdentity(dir, file ? path.resolve(file) : undefined);
    this.codes = new PairingCodes(now, this.kv);
    this.invites = new Invites(this.identity, dir, now, this.kv);
    this.sessions = new SecureSessions(this.identity, now, this.kv);
  }

  server() {
    return { id: this.identity.id, public_key: this.identity.publicKey };
  }

  async challenge(): Promise<{ nonce: string; expiresMs: number }> {
    const now = this.now();
    if (!this.kv.shared && (await this.kv.keys("ch:")).length > 10_000) throw new SvcError("rate_limited", "rate_limit_exceeded", "too many outstanding pairing challenges; retry in a minute", null, { retryAfterSeconds: 60 });
    const nonce = b64u(randomBytes(24));
    const expiresMs = now + CHALLENGE_TTL_MS;
    await this.kv.put(`ch:${nonce}`, String(expiresMs), CHALLENGE_TTL_MS);
    return { nonce, expiresMs };
  }

  private async consumeChallenge(nonce: unknown) {
    const got = typeof nonce === "string" && nonce ? await this.kv.take(`ch:${nonce}`) : null;
    const exp = got === null ? undefined : Number(got);
    if (exp === undefined || exp <= this.now()) {
      throw new SvcError("invalid", "invalid_request", "unknown, used or expired challenge nonce: GET /pair/challenge again", "nonce");
    }
  }

  /** POST /pair: a challenge answered with the device's public key; pending host approval. */
  async request(b: { nonce?: unknown; public_key?: unknown; name?: unknown }, ip: string): Promise<PendingRequest> {
    await this.consumeChallenge(b.nonce);
    const publicKey = checkPublicKey(b.public_key);
    const now = this.now();
    const r: PendingRequest = { id: "req_" + b64u(randomBytes(9)), name: checkName(b.name), publicKey, ip, expiresMs: now + REQUEST_TTL_MS, status: "pending" };
    await this.saveRequest(r);
    return r;
  }

  private saveRequest(r: PendingRequest): Promise<void> {
    return this.kv.put(`req:${r.id}`, JSON.stringify(r), Math.max(1, r.expiresMs - this.now()));
  }

  async pending(): Promise<PendingRequest[]> {
    const now = this.now();
    const out: PendingRequest[] = [];
    for (const k of await this.kv.keys("req:")) {
      const raw = await this.kv.get(k);
      const r = raw ? (JSON.parse(raw) as PendingRequest) : undefined;
      if (r && r.status === "pending" && r.expiresMs > now) out.push(r);
    }
    return out;
  }

  private async pendingRequest(id: string): Promise<PendingRequest> {
    const raw = typeof id === "string" && id ? await this.kv.get(`req:${id}`) : null;
    const r = raw ? (JSON.parse(raw) as PendingRequest) : undefined;
    if (!r || r.expiresMs <= this.now()) throw new SvcError("not_found", "not_found", `no pending pairing request ${JSON.stringify(id)} (requests expire after 5 minutes)`);
    return r;
  }

  async approve(id: string, scopes?: string[]): Promise<PendingRequest> {
    const r = await this.pendingRequest(id);
    // one decision per request, whichever replica the host asks
    if (r.status !== "pending" || !(await this.kv.claim(`decided:${id}`, "approved", REQUEST_TTL_MS))) {
      const now = await this.pendingRequest(id);
      throw new SvcError("conflict", "conflict", `pairing request ${id} is already ${now.status === "pending" ? "being decided" : now.status}`);
    }
    r.result = await this.pairDevice(r.publicKey, r.name, scopes, "approval", r.ip);
    r.status = "approved";
    await this.saveRequest(r);
    return r;
  }

  async deny(id: string): Promise<PendingRequest> {
    const r = await this.pendingRequest(id);
    if (r.status === "pending" && (await this.kv.claim(`decided:${id}`, "denied", REQUEST_TTL_MS))) {
      r.status = "denied";
      await this.saveRequest(r);
    }
    return r;
  }

  /** The device polls its request: pending, or its sealed key (delivered once). */
  async poll(id: string): Promise<{ status: "pending" | "denied" | "paired"; result?: PairResult }> {
    const r = await this.pendingRequest(id);
    if (r.status === "approved") {
      const first = await this.kv.claim(`delivered:${id}`, "1", REQUEST_TTL_MS);
      return { status: "paired", result: first ? r.result : undefined };
    }
    return { status: r.status };
  }

  async redeemCode(b: { code?: unknown; public_key?: unknown; name?: unknown; nonce?: unknown }, ip: string): Promise<PairResult> {
    const publicKey = checkPublicKey(b.public_key);
    if (b.nonce !== undefined) await this.consumeChallenge(b.nonce);
    const c = await this.codes.redeem(String(b.code ?? ""), ip);
    return this.pairDevice(publicKey, checkName(b.name), c.scopes, "code", ip);
  }

  createInvite(o: { ttlSeconds?: unknown; scopes?: unknown; name?: unknown; url?: string }) {
    const ttl = o.ttlSeconds ?? 24 * 3600;
    if (typeof ttl !== "number" || !Number.isInteger(ttl) || ttl < 1 || ttl > 30 * 86400) {
      throw new SvcError("invalid", "invalid_request", "expires_in must be whole seconds from 1 to 2592000 (30 days)", "expires_in");
    }
    return this.invites.create({ ttlMs: ttl * 1000, scopes: checkScopes(o.scopes), name: o.name === undefined ? undefined : checkName(o.name), url: o.url });
  }

  async acceptInvite(b: { invite?: unknown; public_key?: unknown; name?: unknown }, ip: string): Promise<PairResult> {
    const publicKey = checkPublicKey(b.public_key);
    const p: InvitePayload = await this.invites.consume(b.invite as string);
    return this.pairDevice(publicKey, checkName(b.name ?? p.name), p.scopes, "invite", ip);
  }

  /** Make the device's key (an ApiKey object) and seal it to the device. */
  private async pairDevice(publicKey: string, name: string, scopes: string[] | undefined, via: string, ip: string): Promise<PairResult> {
    const id = newKeyId("dev_");
    const secret = generateSecret();
    const granted = scopes ?? DEVICE_SCOPES;
    const spec: ApiKeySpec = {
      name: `device ${name}`,
      description: `paired device (${via})`,
      key_type: "user",
      scopes: granted as ApiKeySpec["scopes"],
      secretHash: `sha256:${hashSecret(secret)}`,
      metadata: { paired_device: { name, public_key: publicKey, paired_at: new Date(this.now()).toISOString(), via, ip } },
    };
    await this.store.write([{ op: "upsert", kind: "ApiKey", name: id, owner: "api", spec }]);
    const sealed = sealTo(publicKey, secret, sealAad(id));
    return {
      device_id: id,
      name,
      scopes: granted,
      server: this.server(),
      sealed_key: sealed,
      signature: this.identity.sign(pairTranscript(this.identity.id, id, publicKey, sealed)),
    };
  }

  devices(): DeviceView[] {
    return this.store
      .list({ kind: "ApiKey" })
      .filter((o) => isDevice(o) && !(o.spec as ApiKeySpec).revoked_at)
      .map(deviceView);
  }

  device(id: string): DeviceView | undefined {
    const o = this.store.get("ApiKey", id);
    return o && isDevice(o) && !(o.spec as ApiKeySpec).revoked_at ? deviceView(o) : undefined;
  }

  /** Revoke the device's key (effective on the next request) and end its secure sessions. */
  async unpair(id: string): Promise<DeviceView> {
    const o = this.store.get("ApiKey", id);
    if (!o || !isDevice(o) || (o.spec as ApiKeySpec).revoked_at) throw new SvcError("not_found", "not_found", `no paired device ${JSON.stringify(id)}`);
    const view = deviceView(o);
    await this.store.write([{ op: "upsert", kind: "ApiKey", name: id, owner: o.owner, spec: { ...(o.spec as ApiKeySpec), revoked_at: new Date(this.now()).toISOString() } }]);
    await this.sessions.endDevice(id);
    return view;
  }

  close() {
    this.sessions.close();
  }
}

function isDevice(o: StoredObject): boolean {
  return !!(o.spec as ApiKeySpec).metadata?.paired_device;
}

function deviceView(o: StoredObject): DeviceView {
  const s = o.spec as ApiKeySpec;
  const d = s.metadata!.paired_device as Record<string, string>;
  return { device_id: o.name, name: d.name, public_key: d.public_key, scopes: s.scopes ?? DEVICE_SCOPES, paired_at: d.paired_at, via: d.via, ip: d.ip };
}

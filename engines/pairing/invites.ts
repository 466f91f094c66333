// Signed, expiring, single-use pairing invites: `svcinv1.<payload>.<Ed25519 signature>`, both
// base64url. The payload names the server (id, identity public key, address) so the device can
// check the server it talks to is the one that signed. Used invite ids are kept in
// <dir>/used-invites.json until they expire, so a restart does not make an invite reusable; with
// replicas sharing pairing state (engines/pairing/kv.ts) they are claimed there instead, once for all.
import { randomBytes } from "node:crypto";
import { existsSync, readFileSync, writeFileSync, renameSync } from "node:fs";
import path from "node:path";
import { SvcError } from "../errors";
import { b64u, ed25519Public, fromB64u, verifyText } from "./crypto";
import type { Identity } from "./identity";
import type { PairKv } from "./kv";

export interface InvitePayload {
  v: 1;
  id: string;
  server_id: string;
  server_public_key: string;
  url?: string;
  exp: number; // ms since epoch
  scopes?: string[];
  name?: string;
}

export function parseInvite(invite: string): { payload: InvitePayload; body: string; sig: string } {
  const m = /^svcinv1\.([A-Za-z0-9_-]+)\.([A-Za-z0-9_-]+)$/.exec(typeof invite === "string" ? invite.trim() : "");
  if (!m) throw new SvcError("invalid", "invalid_request", "invite is not an svc pairing invite (svcinv1.…)", "invite");
  let payload: InvitePayload;
  try {
    payload = JSON.parse(fromB64u(m[1]).toString("utf8"));
  } catch {
    throw new SvcError("invalid", "invalid_request", "invite payload is not readable", "invite");
  }
  // the payload is read before its signature is checked: its shape is the sender's to get wrong
  if (!isPayload(payload)) throw new SvcError("invalid", "invalid_request", "invite payload is not an svc invite's {id, server_id, server_public_key, exp}", "invite");
  return { payload, body: m[1], sig: m[2] };
}

function isPayload(p: any): p is InvitePayload {
  return (
    typeof p === "object" && p !== null && !Array.isArray(p) &&
    typeof p.id === "string" && typeof p.server_id === "string" && typeof p.server_public_key === "string" && typeof p.exp === "number" &&
    (p.url === undefined || typeof p.url === "string") && (p.name === undefined || typeof p.name === "string") &&
    (p.scopes === undefined || (Array.isArray(p.scopes) && p.scopes.every((x: unknown) => typeof x === "string")))
  );
}

/** Does the invite carry a valid signature by the key it names? (the device's check) */
export function inviteSignedBy(invite: string, publicKey: string): boolean {
  const p = parseInvite(invite);
  return verifyText(ed25519Public(publicKey), "svcinv1." + p.body, p.sig);
}

export class Invites {
  private used = new Map<string, number>();
  private readonly file: string;

  constructor(private readonly identity: Identity, dir: string, private readonly now: () => number, private readonly kv?: PairKv) {
    this.file = path.join(dir, "used-invites.json");
    if (existsSync(this.file)) {
      try {
        for (const [id, exp] of Object.entries(JSON.parse(readFileSync(this.file, "utf8")) as Record<string, number>)) this.used.set(id, exp);
      } catch {
        /* unreadable: start empty (invites still expire) */
      }
    }
  }

  create(o: { ttlMs: number; scopes?: string[]; name?: string; url?: string }): { invite: string; payload: InvitePayload } {
    const payload: InvitePayload = {
      v: 1,
      id: b64u(randomBytes(12)),
      server_id: this.identity.id,
      server_public_key: this.identity.publicKey,
      url: o.url,
      exp: this.now() + o.ttlMs,
      scopes: o.scopes,
      name: o.name,
    };
    const body = b64u(Buffer.from(JSON.stringify(payload), "utf8"));
    return { invite: `svcinv1.${body}.${this.identity.sign("svcinv1." + body)}`, payload };
  }

  /** Verify and consume; throws 400 (malformed / not ours), 401 (expired), 409 (used). */
  async consume(invite: string): Promise<InvitePayload> {
    const { payload, body, sig } = parseInvite(invite);
    if (payload.server_public_key !== this.identity.publicKey || !verifyText(ed25519Public(this.identity.publicKey), "svcinv1." + body, sig)) {
      throw new SvcError("invalid", "invalid_request", "invite was not signed by this server", "invite");
    }
    const now = this.now();
    if (!(payload.exp > now)) throw new SvcError("unauthenticated", "key_expired", "invite has expired; ask the host for a new one (svc pair invite)", "invite");
    if (this.kv?.shared) {
      if (!(await this.kv.claim(`inv:${payload.id}`, "1", payload.exp - now))) throw new SvcError("conflict", "conflict", "invite was already used", "invite");
      return payload;
    }
    if (this.used.has(payload.id)) throw new SvcError("conflict", "conflict", "invite was already used", "invite");
    for (const [id, exp] of this.used) if (exp <= now) this.used.delete(id);
    this.used.set(payload.id, payload.exp);
    const tmp = this.file + ".tmp";
    writeFileSync(tmp, JSON.stringify(Object.fromEntries(this.used)), { mode: 0o600 });
    renameSync(tmp, this.file);
    return payload;
  }
}

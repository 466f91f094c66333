// The secure channel: an ephemeral X25519 exchange per session (both sides), keys derived with
// HKDF-SHA256 from the shared secret salted by the transcript hash, one AES-256-GCM key per
// direction. The server signs the transcript with its Ed25519 identity, so a paired device
// (which pinned that key) knows whom it talks to. Calls carry strictly increasing sequence
// numbers (a repeat or an older one is a replay); answer frames are numbered and closed by an
// authenticated end frame, so a cut or reordered stream is detected.
import { createHash, randomBytes, type KeyObject } from "node:crypto";
import { SvcError } from "../errors";
import { b64u, deriveKey, open, seal, x25519Pair, x25519Public, type Sealed } from "./crypto";
import type { Identity } from "./identity";
import type { PairKv } from "./kv";

export const SESSION_TTL_MS = 10 * 60_000;
const MAX_SESSIONS = 10_000;

export interface Session {
  id: string;
  c2s: Buffer;
  s2c: Buffer;
  expiresMs: number;
  lastSeq: number;
  deviceId?: string;
}

export function sessionTranscript(serverId: string, sessionId: string, clientEpk: string, serverEpk: string, clientNonce: string, expiresMs: number): string {
  return ["svc-secure-v1", serverId, sessionId, clientEpk, serverEpk, clientNonce, String(expiresMs)].join("|");
}

/** Both directions' keys (the client calls this with its own private key and the server's epk). */
export function sessionKeys(priv: KeyObject, peerEpk: string, transcript: string): { c2s: Buffer; s2c: Buffer } {
  const salt = createHash("sha256").update(transcript).digest();
  const peer = x25519Public(peerEpk);
  return { c2s: deriveKey(priv, peer, salt, "svc-secure-v1 c2s"), s2c: deriveKey(priv, peer, salt, "svc-secure-v1 s2c") };
}

export const callAad = (sid: string, seq: number) => `svc-secure-v1|${sid}|c2s|${seq}`;
export const frameAad = (sid: string, seq: number, n: number) => `svc-secure-v1|${sid}|s2c|${seq}|${n}`;

/** A session as kept in the kv: its keys sealed under a key only the server identity derives. */
interface StoredSession {
  keys: Sealed;
  expiresMs: number;
  deviceId?: string;
}

export class SecureSessions {
  private readonly wrap: Buffer;

  constructor(private readonly identity: Identity, private readonly now: () => number, private readonly kv: PairKv) {
    this.wrap = identity.secret("svc-secure-v1 session-wrap");
  }

  async open(clientEpk: string, clientNonce: string, ttlSeconds: number | undefined, deviceId?: string) {
    const now = this.now();
    if (!this.kv.shared && (await this.kv.keys("ses:")).length >= MAX_SESSIONS) throw new SvcError("rate_limited", "rate_limit_exceeded", "too many open secure sessions; retry later", null, { retryAfterSeconds: 60 });
    const eph = x25519Pair();
    const id = "ses_" + b64u(randomBytes(18));
    const expiresMs = now + (ttlSeconds ?? SESSION_TTL_MS / 1000) * 1000;
    const transcript = sessionTranscript(this.identity.id, id, clientEpk, eph.publicKey, clientNonce, expiresMs);
    const keys = sessionKeys(eph.privateKey, clientEpk, transcript);
    const stored: StoredSession = { keys: seal(this.wrap, Buffer.concat([keys.c2s, keys.s2c]), id), expiresMs, deviceId };
    // kept a minute past its end, so a late call is told "expired" rather than "unknown"
    await this.kv.put(`ses:${id}`, JSON.stringify(stored), expiresMs - now + 60_000);
    if (deviceId) await this.kv.put(`dev:${deviceId}:${id}`, "1", expiresMs - now + 60_000);
    return { session_id: id, server_epk: eph.publicKey, expires_at: new Date(expiresMs).toISOString(), expires_ms: expiresMs, signature: this.identity.sign(transcript) };
  }

  /** Authenticate and decrypt one call. 404 unknown session, 401 session_expired, 400
   * decryption_failed (tampered or wrong key), 409 replay_refused (sequence not above the last). */
  async accept(id: unknown, seq: unknown, sealed: Sealed): Promise<{ session: Session; plaintext: Buffer }> {
    const raw = typeof id === "string" && id.startsWith("ses_") ? await this.kv.get(`ses:${id}`) : null;
    if (!raw) throw new SvcError("not_found", "not_found", "unknown secure session: open one with POST /secure/session", "session_id");
    const st = JSON.parse(raw) as StoredSession;
    const sid = id as string;
    if (st.expiresMs <= this.now()) {
      await this.kv.del([`ses:${sid}`, `seq:${sid}`]);
      throw new SvcError("unauthenticated", "session_expired", "the secure session has expired: open a new one with POST /secure/session", "session_id");
    }
    if (typeof seq !== "number" || !Number.isSafeInteger(seq) || seq < 1) throw new SvcError("invalid", "invalid_request", "seq must be a positive integer", "seq");
    if (typeof sealed.nonce !== "string" || typeof sealed.ciphertext !== "string") throw new SvcError("invalid", "invalid_request", "nonce and ciphertext (base64url) are required", "ciphertext");
    const k = open(this.wrap, st.keys, sid);
    if (!k) throw new SvcError("not_found", "not_found", "unknown secure session: open one with POST /secure/session", "session_id");
    const s: Session = { id: sid, c2s: k.subarray(0, 32), s2c: k.subarray(32), expiresMs: st.expiresMs, lastSeq: 0, deviceId: st.deviceId };
    const plaintext = open(s.c2s, sealed, callAad(s.id, seq));
    if (!plaintext) throw new SvcError("invalid", "decryption_failed", "the call does not authenticate (tampered, wrong key or wrong sequence number)", "ciphertext");
    // checked after decryption (a forged message cannot burn sequence numbers), on every replica at once
    if (!(await this.kv.raise(`seq:${sid}`, seq, st.expiresMs - this.now() + 60_000))) {
      const last = Number((await this.kv.get(`seq:${sid}`)) ?? 0);
      throw new SvcError("conflict", "replay_refused", `sequence ${seq} was already used (last ${last}): calls need a strictly increasing seq`, "seq");
    }
    s.lastSeq = seq;
    return { session: s, plaintext };
  }

  sealFrame(s: Session, seq: number, n: number, frame: unknown): Sealed {
    return seal(s.s2c, Buffer.from(JSON.stringify(frame), "utf8"), frameAad(s.id, seq, n));
  }

  async endDevice(deviceId: string): Promise<void> {
    const marks = await this.kv.keys(`dev:${deviceId}:`);
    const ids = marks.map((m) => m.slice(`dev:${deviceId}:`.length));
    await this.kv.del([...marks, ...ids.flatMap((id) => [`ses:${id}`, `seq:${id}`])]);
  }

  /** nothing to release: entries expire by themselves (and a memory kv goes with the process) */
  close() {}
}

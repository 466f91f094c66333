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

export class SecureSessions {
  private sessions = new Map<string, Session>();

  constructor(private readonly identity: Identity, private readonly now: () => number) {}

  open(clientEpk: string, clientNonce: string, ttlSeconds: number | undefined, deviceId?: string) {
    const now = this.now();
    for (const [id, s] of this.sessions) if (s.expiresMs <= now) this.sessions.delete(id);
    if (this.sessions.size >= MAX_SESSIONS) throw new SvcError("rate_limited", "rate_limit_exceeded", "too many open secure sessions; retry later", null, { retryAfterSeconds: 60 });
    const eph = x25519Pair();
    const id = "ses_" + b64u(randomBytes(18));
    const expiresMs = now + (ttlSeconds ?? SESSION_TTL_MS / 1000) * 1000;
    const transcript = sessionTranscript(this.identity.id, id, clientEpk, eph.publicKey, clientNonce, expiresMs);
    const keys = sessionKeys(eph.privateKey, clientEpk, transcript);
    this.sessions.set(id, { id, ...keys, expiresMs, lastSeq: 0, deviceId });
    return { session_id: id, server_epk: eph.publicKey, expires_at: new Date(expiresMs).toISOString(), expires_ms: expiresMs, signature: this.identity.sign(transcript) };
  }

  /** Authenticate and decrypt one call. 404 unknown session, 401 session_expired, 400
   * decryption_failed (tampered or wrong key), 409 replay_refused (sequence not above the last). */
  accept(id: unknown, seq: unknown, sealed: Sealed): { session: Session; plaintext: Buffer } {
    const s = typeof id === "string" ? this.sessions.get(id) : undefined;
    if (!s) throw new SvcError("not_found", "not_found", "unknown secure session: open one with POST /secure/session", "session_id");
    if (s.expiresMs <= this.now()) {
      this.sessions.delete(s.id);
      throw new SvcError("unauthenticated", "session_expired", "the secure session has expired: open a new one with POST /secure/session", "session_id");
    }
    if (typeof seq !== "number" || !Number.isSafeInteger(seq) || seq < 1) throw new SvcError("invalid", "invalid_request", "seq must be a positive integer", "seq");
    if (typeof sealed.nonce !== "string" || typeof sealed.ciphertext !== "string") throw new SvcError("invalid", "invalid_request", "nonce and ciphertext (base64url) are required", "ciphertext");
    const plaintext = open(s.c2s, sealed, callAad(s.id, seq));
    if (!plaintext) throw new SvcError("invalid", "decryption_failed", "the call does not authenticate (tampered, wrong key or wrong sequence number)", "ciphertext");
    if (seq <= s.lastSeq) throw new SvcError("conflict", "replay_refused", `sequence ${seq} was already used (last ${s.lastSeq}): calls need a strictly increasing seq`, "seq");
    s.lastSeq = seq;
    return { session: s, plaintext };
  }

  sealFrame(s: Session, seq: number, n: number, frame: unknown): Sealed {
    return seal(s.s2c, Buffer.from(JSON.stringify(frame), "utf8"), frameAad(s.id, seq, n));
  }

  endDevice(deviceId: string) {
    for (const [id, s] of this.sessions) if (s.deviceId === deviceId) this.sessions.delete(id);
  }

  close() {
    this.sessions.clear();
  }
}

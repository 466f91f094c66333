// The pairing client: what a device runs to pair with svc and talk to it through the secure
// channel. `svc pair …` (cli/pair.ts) and the tests use it. It verifies every server signature
// against the server identity it pinned (from the challenge, the invite, or the first pairing)
// and every answer frame's sequence and end frame, so a cut or altered answer is an error.
import { randomBytes } from "node:crypto";
import { chmodSync, existsSync, readFileSync, writeFileSync } from "node:fs";
import { ed25519Public, open, privateFromPem, seal, verifyText, x25519Pair, b64u } from "../engines/pairing/crypto";
import { openFrom } from "../engines/pairing/crypto";
import { pairTranscript, sealAad, type PairResult } from "../engines/pairing";
import { callAad, frameAad, sessionKeys, sessionTranscript } from "../engines/pairing/channel";
import { inviteSignedBy, parseInvite } from "../engines/pairing/invites";

export class PairError extends Error {
  constructor(message: string, readonly status?: number, readonly code?: string) {
    super(message);
  }
}

export interface DeviceState {
  url: string;
  name: string;
  server: { id: string; public_key: string };
  device_id: string;
  scopes: string[];
  api_key: string;
  private_key_pem: string;
  public_key: string;
}

export interface InnerCall {
  method: string;
  path: string;
  headers?: Record<string, string>;
  body?: unknown;
}

export interface CallAnswer {
  status: number;
  headers: Record<string, string>;
  body: Buffer;
  frames: number;
}

async function http(url: string, method: string, body?: unknown, headers: Record<string, string> = {}): Promise<{ status: number; json: any }> {
  let res: Response;
  try {
    res = await fetch(url, { method, headers: { ...(body !== undefined ? { "content-type": "application/json" } : {}), ...headers }, body: body !== undefined ? JSON.stringify(body) : undefined });
  } catch (e: any) {
    throw new PairError(`cannot reach ${url}: ${e?.cause?.code ?? e?.message ?? e}`);
  }
  const json: any = await res.json().catch(() => null);
  return { status: res.status, json };
}

const fail = (r: { status: number; json: any }, what: string) =>
  new PairError(`${what}: ${r.json?.error?.message ?? `HTTP ${r.status}`}`, r.status, r.json?.error?.code);

/** A device key pair that has not paired yet. */
export function newDeviceKey(): { privatePem: string; publicKey: string } {
  const p = x25519Pair();
  return { privatePem: p.privateKey.export({ format: "pem", type: "pkcs8" }) as string, publicKey: p.publicKey };
}

/** Verify the server's signature and open the sealed key: the paired device's state. */
export function finishPairing(url: string, name: string, key: { privatePem: string; publicKey: string }, r: PairResult, pinned?: string): DeviceState {
  const serverKey = pinned ?? r.server.public_key;
  if (r.server.public_key !== serverKey) throw new PairError("the server's identity key is not the one pinned for it (possible interception)");
  if (!verifyText(ed25519Public(serverKey), pairTranscript(r.server.id, r.device_id, key.publicKey, r.sealed_key), r.signature)) {
    throw new PairError("the pairing answer's signature does not verify");
  }
  const apiKey = openFrom(privateFromPem(key.privatePem), key.publicKey, r.sealed_key, sealAad(r.device_id));
  if (!apiKey) throw new PairError("the sealed key does not open with this device's key");
  return { url, name, server: r.server, device_id: r.device_id, scopes: r.scopes, api_key: apiKey, private_key_pem: key.privatePem, public_key: key.publicKey };
}

/** Pair by challenge: returns the pending request id; then waitForApproval. */
export async function requestPairing(url: string, name: string) {
  const key = newDeviceKey();
  const c = await http(`${url}/pair/challenge`, "GET");
  if (c.status !== 200) throw fail(c, "challenge");
  const r = await http(`${url}/pair`, "POST", { nonce: c.json.nonce, public_key: key.publicKey, name });
  if (r.status !== 202) throw fail(r, "pairing request");
  return { key, requestId: r.json.request_id as string, server: c.json.server as { id: string; public_key: string } };
}

export async function waitForApproval(url: string, name: string, pending: Awaited<ReturnType<typeof requestPairing>>, timeoutMs = 120_000, stepMs = 250): Promise<DeviceState> {
  const end = Date.now() + timeoutMs;
  for (;;) {
    const r = await http(`${url}/pair/hello`, "POST", { request_id: pending.requestId });
    if (r.status === 200) return finishPairing(url, name, pending.key, r.json, pending.server.public_key);
    if (r.status !== 202) throw fail(r, "pairing");
    if (Date.now() > end) throw new PairError(`not approved within ${Math.round(timeoutMs / 1000)} s (approve on the host: svc pair approve ${pending.requestId})`);
    await new Promise((res) => setTimeout(res, stepMs));
  }
}

export async function pairWithCode(url: string, code: string, name: string): Promise<DeviceState> {
  const key = newDeviceKey();
  const c = await http(`${url}/pair/challenge`, "GET");
  if (c.status !== 200) throw fail(c, "challenge");
  const r = await http(`${url}/pair/code`, "POST", { code, public_key: key.publicKey, name, nonce: c.json.nonce });
  if (r.status !== 200) throw fail(r, "pairing by code");
  return finishPairing(url, name, key, r.json, c.json.server.public_key);
}

export async function acceptInvite(invite: string, name: string, url?: string): Promise<DeviceState> {
  const p = parseInvite(invite).payload;
  if (!inviteSignedBy(invite, p.server_public_key)) throw new PairError("the invite's signature does not verify");
  const base = url ?? p.url;
  if (!base) throw new PairError("the invite names no address: pass --url");
  const key = newDeviceKey();
  const r = await http(`${base}/pair-invite`, "POST", { invite, public_key: key.publicKey, name });
  if (r.status !== 200) throw fail(r, "accepting the invite");
  return finishPairing(base, name, key, r.json, p.server_public_key);
}

export function saveState(file: string, s: DeviceState): void {
  writeFileSync(file, JSON.stringify(s, null, 2) + "\n", { mode: 0o600 });
  chmodSync(file, 0o600);
}

export function loadState(file: string): DeviceState {
  if (!existsSync(file)) throw new PairError(`no paired device state at ${file}: pair first (svc pair request|code|invite accept)`);
  return JSON.parse(readFileSync(file, "utf8"));
}

/** A secure-channel session of a paired device (or of anyone who knows the server key). */
export class SecureSession {
  private seq = 0;
  private constructor(readonly url: string, readonly id: string, private c2s: Buffer, private s2c: Buffer, private apiKey?: string) {}

  static async open(url: string, serverPublicKey: string, o: { apiKey?: string; ttlSeconds?: number } = {}): Promise<SecureSession> {
    const eph = x25519Pair();
    const nonce = b64u(randomBytes(18));
    const r = await http(`${url}/secure/session`, "POST", { client_epk: eph.publicKey, client_nonce: nonce, ttl_seconds: o.ttlSeconds }, o.apiKey ? { authorization: `Bearer ${o.apiKey}` } : {});
    if (r.status !== 201) throw fail(r, "opening a secure session");
    const j = r.json;
    const serverId = j.server?.id;
    const t = sessionTranscript(serverId, j.session_id, eph.publicKey, j.server_epk, nonce, j.expires_ms);
    if (j.server?.public_key !== serverPublicKey || !verifyText(ed25519Public(serverPublicKey), t, j.signature)) {
      throw new PairError("the secure session's transcript is not signed by the pinned server identity");
    }
    const keys = sessionKeys(eph.privateKey, j.server_epk, t);
    return new SecureSession(url, j.session_id, keys.c2s, keys.s2c, o.apiKey);
  }

  static forDevice(s: DeviceState, ttlSeconds?: number) {
    return SecureSession.open(s.url, s.server.public_key, { apiKey: s.api_key, ttlSeconds });
  }

  /** The sealed envelope of the next call (exposed so tests can replay or tamper with it). */
  envelope(inner: InnerCall): { session_id: string; seq: number; nonce: string; ciphertext: string } {
    const withKey = this.apiKey ? { ...inner, headers: { authorization: `Bearer ${this.apiKey}`, ...(inner.headers ?? {}) } } : inner;
    const seq = ++this.seq;
    return { session_id: this.id, seq, ...seal(this.c2s, Buffer.from(JSON.stringify(withKey), "utf8"), callAad(this.id, seq)) };
  }

  /** Send an envelope; onData sees the inner answer's bytes as they arrive. */
  async send(env: ReturnType<SecureSession["envelope"]>, onData?: (chunk: Buffer) => void): Promise<CallAnswer> {
    let res: Response;
    try {
      res = await fetch(`${this.url}/secure/call`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(env) });
    } catch (e: any) {
      throw new PairError(`cannot reach ${this.url}: ${e?.cause?.code ?? e?.message ?? e}`);
    }
    if (res.status !== 200) throw fail({ status: res.status, json: await res.json().catch(() => null) }, "secure call");
    const dec = new TextDecoder();
    let buf = "";
    let n = 0;
    let head: { status: number; headers: Record<string, string> } | undefined;
    const parts: Buffer[] = [];
    let ended = false;
    const take = (line: string) => {
      if (!line) return;
      if (ended) throw new PairError("data after the end frame");
      const f = JSON.parse(line);
      if (f.n !== n) throw new PairError(`answer frame ${f.n} arrived where ${n} was due`);
      const plain = open(this.s2c, f, frameAad(this.id, env.seq, n));
      if (!plain) throw new PairError(`answer frame ${n} does not authenticate`);
      n++;
      const fr = JSON.parse(plain.toString("utf8"));
      if (fr.type === "head") head = fr;
      else if (fr.type === "data") {
        const b = Buffer.from(fr.data, "base64");
        parts.push(b);
        onData?.(b);
      } else if (fr.type === "end") {
        const bytes = parts.reduce((a, b) => a + b.length, 0);
        if (fr.frames !== n - 1 || fr.bytes !== bytes) throw new PairError("the end frame does not match what arrived");
        ended = true;
      }
    };
    for await (const chunk of res.body as any as AsyncIterable<Uint8Array>) {
      buf += dec.decode(chunk, { stream: true });
      let i: number;
      while ((i = buf.indexOf("\n")) >= 0) {
        take(buf.slice(0, i));
        buf = buf.slice(i + 1);
      }
    }
    take(buf);
    if (!ended || !head) throw new PairError("the answer ended without its authenticated end frame (cut off)");
    return { status: head.status, headers: head.headers, body: Buffer.concat(parts), frames: n };
  }

  call(inner: InnerCall, onData?: (chunk: Buffer) => void): Promise<CallAnswer> {
    return this.send(this.envelope(inner), onData);
  }
}

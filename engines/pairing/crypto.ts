// The pairing and secure-channel primitives, node:crypto only: X25519 key agreement, HKDF-SHA256,
// AES-256-GCM, Ed25519 signatures. Public keys travel as base64url of their 32 raw bytes.
import {
  createPrivateKey,
  createPublicKey,
  createCipheriv,
  createDecipheriv,
  diffieHellman,
  generateKeyPairSync,
  hkdfSync,
  randomBytes,
  sign,
  verify,
  type KeyObject,
} from "node:crypto";

export const b64u = (b: Uint8Array) => Buffer.from(b).toString("base64url");
export const fromB64u = (s: string) => Buffer.from(s, "base64url");

export interface X25519Pair {
  privateKey: KeyObject;
  /** base64url of the raw 32-byte public key */
  publicKey: string;
}

export function x25519Pair(): X25519Pair {
  const { privateKey, publicKey } = generateKeyPairSync("x25519");
  return { privateKey, publicKey: publicKey.export({ format: "jwk" }).x! };
}

/** A raw X25519 public key (base64url) as a KeyObject; throws on anything else. */
export function x25519Public(raw: string): KeyObject {
  if (typeof raw !== "string" || !/^[A-Za-z0-9_-]{43}$/.test(raw)) throw new Error("not a base64url X25519 public key (32 bytes)");
  return createPublicKey({ key: { kty: "OKP", crv: "X25519", x: raw }, format: "jwk" });
}

export function ed25519Public(raw: string): KeyObject {
  if (typeof raw !== "string" || !/^[A-Za-z0-9_-]{43}$/.test(raw)) throw new Error("not a base64url Ed25519 public key (32 bytes)");
  return createPublicKey({ key: { kty: "OKP", crv: "Ed25519", x: raw }, format: "jwk" });
}

export function rawPublic(k: KeyObject): string {
  return k.export({ format: "jwk" }).x!;
}

export function privateFromPem(pem: string): KeyObject {
  return createPrivateKey(pem);
}

/** X25519 shared secret -> 32-byte key via HKDF-SHA256. */
export function deriveKey(priv: KeyObject, peerPublic: KeyObject, salt: Uint8Array, info: string): Buffer {
  const shared = diffieHellman({ privateKey: priv, publicKey: peerPublic });
  return Buffer.from(hkdfSync("sha256", shared, salt, Buffer.from(info, "utf8"), 32));
}

export interface Sealed {
  nonce: string;
  ciphertext: string; // base64url of ciphertext || 16-byte tag
}

export function seal(key: Uint8Array, plaintext: Uint8Array, aad: string): Sealed {
  const nonce = randomBytes(12);
  const c = createCipheriv("aes-256-gcm", key, nonce);
  c.setAAD(Buffer.from(aad, "utf8"));
  const ct = Buffer.concat([c.update(plaintext), c.final(), c.getAuthTag()]);
  return { nonce: b64u(nonce), ciphertext: b64u(ct) };
}

/** Decrypt and authenticate; null when the ciphertext, nonce or AAD was altered. */
export function open(key: Uint8Array, s: Sealed, aad: string): Buffer | null {
  try {
    const nonce = fromB64u(s.nonce);
    const all = fromB64u(s.ciphertext);
    if (nonce.length !== 12 || all.length < 16) return null;
    const d = createDecipheriv("aes-256-gcm", key, nonce);
    d.setAAD(Buffer.from(aad, "utf8"));
    d.setAuthTag(all.subarray(all.length - 16));
    return Buffer.concat([d.update(all.subarray(0, all.length - 16)), d.final()]);
  } catch {
    return null;
  }
}

export function signText(priv: KeyObject, text: string): string {
  return b64u(sign(null, Buffer.from(text, "utf8"), priv));
}

export function verifyText(pub: KeyObject, text: string, sig: string): boolean {
  try {
    return verify(null, Buffer.from(text, "utf8"), pub, fromB64u(sig));
  } catch {
    return false;
  }
}

/** Seal a secret to a device's X25519 public key (ephemeral-static ECDH, like HPKE base mode). */
export function sealTo(devicePublic: string, plaintext: string, aad: string): Sealed & { epk: string } {
  const eph = x25519Pair();
  const key = deriveKey(eph.privateKey, x25519Public(devicePublic), Buffer.from(eph.publicKey + devicePublic), "svc-pair-seal-v1");
  return { epk: eph.publicKey, ...seal(key, Buffer.from(plaintext, "utf8"), aad) };
}

/** The device's side of sealTo. */
export function openFrom(devicePriv: KeyObject, devicePublic: string, s: Sealed & { epk: string }, aad: string): string | null {
  const key = deriveKey(devicePriv, x25519Public(s.epk), Buffer.from(s.epk + devicePublic), "svc-pair-seal-v1");
  const p = open(key, s, aad);
  return p ? p.toString("utf8") : null;
}

// The server's Ed25519 identity: generated once into <home>/pairing/identity.key (PKCS#8 PEM,
// mode 0600) and kept across restarts, so paired devices can pin it. Never logged.
import { generateKeyPairSync, createPrivateKey, createPublicKey, createHash, hkdfSync, type KeyObject } from "node:crypto";
import { chmodSync, existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import path from "node:path";
import { rawPublic, signText } from "./crypto";

export interface Identity {
  /** short fingerprint: first 16 hex of sha256(public key) */
  id: string;
  /** base64url raw Ed25519 public key */
  publicKey: string;
  sign(text: string): string;
  /** a 32-byte key derived from the private key for `info` (sealing the server's own state) */
  secret(info: string): Buffer;
}

/** `file` (default <dir>/identity.key); replicas that share pairing point SVC_PAIRING_IDENTITY_FILE
 * at one file (a mounted secret), so every replica signs as the same server. */
export function loadIdentity(dir: string, file = path.join(dir, "identity.key")): Identity {
  dir = path.dirname(file);
  let priv: KeyObject;
  if (existsSync(file)) {
    priv = createPrivateKey(readFileSync(file, "utf8"));
  } else {
    mkdirSync(dir, { recursive: true, mode: 0o700 });
    const pair = generateKeyPairSync("ed25519");
    try {
      writeFileSync(file, pair.privateKey.export({ format: "pem", type: "pkcs8" }) as string, { mode: 0o600, flag: "wx" });
      chmodSync(file, 0o600);
      priv = pair.privateKey;
    } catch (e: any) {
      if (e?.code !== "EEXIST") throw e;
      priv = createPrivateKey(readFileSync(file, "utf8")); // another replica made it first
    }
  }
  const publicKey = rawPublic(createPublicKey(priv));
  const id = createHash("sha256").update(publicKey).digest("hex").slice(0, 16);
  const der = priv.export({ format: "der", type: "pkcs8" });
  return { id, publicKey, sign: (text) => signText(priv, text), secret: (info) => Buffer.from(hkdfSync("sha256", der, Buffer.alloc(0), Buffer.from(info, "utf8"), 32)) };
}

// The server's Ed25519 identity: generated once into <home>/pairing/identity.key (PKCS#8 PEM,
// mode 0600) and kept across restarts, so paired devices can pin it. Never logged.
import { generateKeyPairSync, createPrivateKey, createPublicKey, createHash, type KeyObject } from "node:crypto";
import { chmodSync, existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import path from "node:path";
import { rawPublic, signText } from "./crypto";

export interface Identity {
  /** short fingerprint: first 16 hex of sha256(public key) */
  id: string;
  /** base64url raw Ed25519 public key */
  publicKey: string;
  sign(text: string): string;
}

export function loadIdentity(dir: string): Identity {
  const file = path.join(dir, "identity.key");
  let priv: KeyObject;
  if (existsSync(file)) {
    priv = createPrivateKey(readFileSync(file, "utf8"));
  } else {
    mkdirSync(dir, { recursive: true, mode: 0o700 });
    const pair = generateKeyPairSync("ed25519");
    writeFileSync(file, pair.privateKey.export({ format: "pem", type: "pkcs8" }) as string, { mode: 0o600, flag: "wx" });
    chmodSync(file, 0o600);
    priv = pair.privateKey;
  }
  const publicKey = rawPublic(createPublicKey(priv));
  const id = createHash("sha256").update(publicKey).digest("hex").slice(0, 16);
  return { id, publicKey, sign: (text) => signText(priv, text) };
}

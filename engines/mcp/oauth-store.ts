// Where the OAuth state of an McpServer (authorization-code grant) lives: one file per service in
// the data dir, <home>/mcp-oauth/<service>.json.enc, encrypted with AES-256-GCM under a key kept
// next to it (<home>/mcp-oauth/key, 32 random bytes, mode 0600). Nothing of it is in the store,
// so plans and exports never carry tokens. `svc mcp login` writes it; the running svc reads it at
// every connect and watches the folder, so a login takes effect at once.
import { createCipheriv, createDecipheriv, randomBytes } from "node:crypto";
import { existsSync, mkdirSync, readFileSync, renameSync, rmSync, watch, writeFileSync, type FSWatcher } from "node:fs";
import path from "node:path";
import type { OAuthClientInformationMixed, OAuthTokens } from "@modelcontextprotocol/sdk/shared/auth.js";
import type { OAuthDiscoveryState } from "@modelcontextprotocol/sdk/client/auth.js";

export interface OAuthState {
  /** the MCP endpoint these credentials were obtained for */
  serverUrl?: string;
  /** the registered client (dynamic registration) or the configured one */
  client?: OAuthClientInformationMixed;
  tokens?: OAuthTokens;
  /** ms since epoch when the access token expires (from expires_in) */
  expiresAt?: number;
  codeVerifier?: string;
  discovery?: OAuthDiscoveryState;
  /** the redirect URI the client was registered with */
  redirectUrl?: string;
}

const dirOf = (home: string) => path.join(home, "mcp-oauth");
const fileOf = (home: string, service: string) => path.join(dirOf(home), `${encodeURIComponent(service)}.json.enc`);

function key(home: string): Buffer {
  const dir = dirOf(home);
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  const f = path.join(dir, "key");
  if (!existsSync(f)) {
    try {
      writeFileSync(f, randomBytes(32), { mode: 0o600, flag: "wx" });
    } catch (e: any) {
      if (e?.code !== "EEXIST") throw e; // another process made it first
    }
  }
  const k = readFileSync(f);
  if (k.length !== 32) throw new Error(`${f} is not a 32-byte key`);
  return k;
}

export function loadOAuthState(home: string, service: string): OAuthState {
  const f = fileOf(home, service);
  if (!existsSync(f)) return {};
  try {
    const box = JSON.parse(readFileSync(f, "utf8")) as { v: 1; iv: string; tag: string; data: string };
    const d = createDecipheriv("aes-256-gcm", key(home), Buffer.from(box.iv, "base64"));
    d.setAuthTag(Buffer.from(box.tag, "base64"));
    return JSON.parse(Buffer.concat([d.update(Buffer.from(box.data, "base64")), d.final()]).toString("utf8")) as OAuthState;
  } catch {
    return {}; // unreadable (key replaced, file damaged): as if never logged in
  }
}

export function saveOAuthState(home: string, service: string, state: OAuthState): void {
  const k = key(home);
  const iv = randomBytes(12);
  const c = createCipheriv("aes-256-gcm", k, iv);
  const data = Buffer.concat([c.update(JSON.stringify(state), "utf8"), c.final()]);
  const box = { v: 1, iv: iv.toString("base64"), tag: c.getAuthTag().toString("base64"), data: data.toString("base64") };
  const f = fileOf(home, service);
  const tmp = `${f}.${process.pid}.tmp`;
  writeFileSync(tmp, JSON.stringify(box), { mode: 0o600 });
  renameSync(tmp, f);
}

export function removeOAuthState(home: string, service: string): void {
  rmSync(fileOf(home, service), { force: true });
}

/** Call `cb` when the service's state file is written (by `svc mcp login` in another process). */
export function watchOAuthState(home: string, service: string, cb: () => void): () => void {
  let w: FSWatcher | undefined;
  try {
    mkdirSync(dirOf(home), { recursive: true, mode: 0o700 });
    const name = path.basename(fileOf(home, service));
    w = watch(dirOf(home), (_ev, f) => {
      if (f === name) cb();
    });
    w.unref();
  } catch {
    /* no watching: the reconnect backoff still picks the login up */
  }
  return () => w?.close();
}

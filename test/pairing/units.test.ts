// The pairing primitives on their own: sealing to a device key, tamper detection, invite
// signatures, which addresses count as the local network.
import { describe, expect, it } from "vitest";
import { mkdtempSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { open, openFrom, seal, sealTo, x25519Pair } from "../../engines/pairing/crypto";
import { loadIdentity } from "../../engines/pairing/identity";
import { Invites, inviteSignedBy } from "../../engines/pairing/invites";
import { isLanAddress } from "../../api/pair-access";

describe("pairing primitives", () => {
  it("seals a secret only the device's key opens, bound to its AAD", () => {
    const dev = x25519Pair();
    const other = x25519Pair();
    const s = sealTo(dev.publicKey, "sk-svc-secret", "aad-1");
    expect(openFrom(dev.privateKey, dev.publicKey, s, "aad-1")).toBe("sk-svc-secret");
    expect(openFrom(dev.privateKey, dev.publicKey, s, "aad-2")).toBeNull();
    expect(openFrom(other.privateKey, other.publicKey, s, "aad-1")).toBeNull();
  });

  it("refuses a flipped bit anywhere in the sealed message", () => {
    const key = Buffer.alloc(32, 7);
    const s = seal(key, Buffer.from("hello"), "a");
    const ct = Buffer.from(s.ciphertext, "base64url");
    for (let i = 0; i < ct.length; i++) {
      const t = Buffer.from(ct);
      t[i] ^= 0x80;
      expect(open(key, { nonce: s.nonce, ciphertext: t.toString("base64url") }, "a")).toBeNull();
    }
    expect(open(key, s, "a")?.toString()).toBe("hello");
  });

  it("signs invites with the persisted identity; another identity's invite does not verify", () => {
    const dir = mkdtempSync(path.join(os.tmpdir(), "svc-pair-unit-"));
    const id = loadIdentity(dir);
    expect(loadIdentity(dir).publicKey).toBe(id.publicKey); // same key after a "restart"
    const inv = new Invites(id, dir, Date.now).create({ ttlMs: 60_000 });
    expect(inviteSignedBy(inv.invite, id.publicKey)).toBe(true);
    const other = loadIdentity(mkdtempSync(path.join(os.tmpdir(), "svc-pair-unit-")));
    expect(inviteSignedBy(inv.invite, other.publicKey)).toBe(false);
  });

  it("counts loopback, private ranges and this machine's own subnets as the local network", () => {
    for (const a of ["127.0.0.1", "::1", "10.1.2.3", "192.168.1.5", "172.16.0.9", "fe80::1", "fd00::5"]) expect(isLanAddress(a), a).toBe(true);
    for (const a of ["8.8.8.8", "1.1.1.1", "2606:4700::1111"]) expect(isLanAddress(a), a).toBe(false);
  });
});

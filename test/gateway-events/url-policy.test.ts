import { describe, expect, it } from "vitest";
import { refuseReason } from "../../engines/gateway/webhooks/url-policy";
import { sign, verifySignature } from "../../engines/gateway/webhooks/signature";

describe("webhook URL policy", () => {
  it("allows HTTPS anywhere and plain HTTP only to loopback receivers", () => {
    for (const ok of ["https://hooks.example.com/x", "http://127.0.0.1:9/x", "http://127.8.0.1/x", "http://localhost:8080/", "http://[::1]:9/x"]) {
      expect(refuseReason(ok), ok).toBeUndefined();
    }
    for (const bad of ["http://hooks.example.com/x", "http://10.0.0.1/x", "http://[::ffff:8.8.8.8]/", "ftp://127.0.0.1/", "not a url", "https://u:p@example.com/"]) {
      expect(refuseReason(bad), bad).toBeTypeOf("string");
    }
  });
});

describe("verifySignature", () => {
  it("accepts any listed v1 signature and refuses stale timestamps when asked", () => {
    const now = Math.floor(Date.now() / 1000);
    const h = sign("s1", now, "{}");
    expect(verifySignature("s1", now, "{}", `v1=deadbeef ${h}`)).toBe(true);
    expect(verifySignature("s1", now, "{}", "")).toBe(false);
    expect(verifySignature("s1", now - 3600, "{}", sign("s1", now - 3600, "{}"), 300)).toBe(false);
    expect(verifySignature("s1", now, "{}", h, 300)).toBe(true);
  });
});

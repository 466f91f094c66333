// A cursor is opaque, but a client can still send a damaged or hand-made one: one whose time is a
// safe integer outside what a date can be (or what the store can compare) is refused with 400
// invalid_request like any other bad cursor, not a 500 from the database layer.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { httpView } from "../helpers/errors";
import { AuditLog } from "../../engines/gateway/audit/log";
import { decodeCursor, encodeCursor } from "../../engines/gateway/audit/cursor";
import { tempDb } from "./helpers";

const cursorOf = (v: unknown) => Buffer.from(JSON.stringify(v)).toString("base64url");

describe("audit cursor bounds", () => {
  let db: Awaited<ReturnType<typeof tempDb>>;
  let log: AuditLog;
  beforeAll(async () => {
    db = await tempDb();
    log = new AuditLog(db.prisma, db.repos.audit, { log: () => {} });
  });
  afterAll(async () => {
    await log.close();
    await db.cleanup();
  });

  it("a cursor time beyond the dates an entry can have is 400 invalid_request, not 500", async () => {
    for (const ts of [9e15, -9e15, 8.64e15, Date.UTC(10000, 0, 1)]) {
      const r = await log.query({ cursor: cursorOf([ts, "aud_x"]) }).then(() => "answered", httpView);
      expect(r, String(ts)).toMatchObject({ status: 400, code: "invalid_request", param: "cursor" });
    }
  });

  it("cursors of real entry times still decode", () => {
    for (const ts of [0, Date.UTC(2026, 10, 22, 10), Date.UTC(9999, 11, 31, 23, 59, 59, 999)]) {
      expect(decodeCursor(encodeCursor({ ts, id: "aud_x" }))).toEqual({ ts, id: "aud_x" });
    }
  });
});

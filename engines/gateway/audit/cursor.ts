// Opaque keyset cursor over (timestamp, id), newest first: stable while new entries arrive
// (they sort before the cursor), unlike offsets.
import { invalidRequest } from "../../errors";

export interface CursorPos {
  ts: number; // epoch ms
  id: string;
}

/** 0000-01-01T00:00:00.000Z and 9999-12-31T23:59:59.999Z: the ISO 8601 years the store writes. */
const MIN_TS = -62_167_219_200_000;
const MAX_TS = 253_402_300_799_999;

export function encodeCursor(p: CursorPos): string {
  return Buffer.from(JSON.stringify([p.ts, p.id])).toString("base64url");
}

export function decodeCursor(s: string): CursorPos {
  try {
    const v = JSON.parse(Buffer.from(s, "base64url").toString("utf8"));
    // the time must be one an entry can have (years 0000-9999): a safe integer beyond that is no
    // valid Date, or one the store cannot compare, and reached the database as a 500
    if (Array.isArray(v) && v.length === 2 && Number.isSafeInteger(v[0]) && v[0] >= MIN_TS && v[0] <= MAX_TS && typeof v[1] === "string" && v[1].length <= 64) {
      return { ts: v[0], id: v[1] };
    }
  } catch {
    /* fall through */
  }
  throw invalidRequest("cursor is not valid", "cursor");
}

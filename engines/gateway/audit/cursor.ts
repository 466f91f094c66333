// Opaque keyset cursor over (timestamp, id), newest first: stable while new entries arrive
// (they sort before the cursor), unlike offsets.
import { invalidRequest } from "../../errors";

export interface CursorPos {
  ts: number; // epoch ms
  id: string;
}

export function encodeCursor(p: CursorPos): string {
  return Buffer.from(JSON.stringify([p.ts, p.id])).toString("base64url");
}

export function decodeCursor(s: string): CursorPos {
  try {
    const v = JSON.parse(Buffer.from(s, "base64url").toString("utf8"));
    if (Array.isArray(v) && v.length === 2 && Number.isSafeInteger(v[0]) && typeof v[1] === "string" && v[1].length <= 64) {
      return { ts: v[0], id: v[1] };
    }
  } catch {
    /* fall through */
  }
  throw invalidRequest("cursor is not valid", "cursor");
}

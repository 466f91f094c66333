// The hot tier: a small in-memory LRU of recently used answers in front of the store (SQLite or
// Redis), keyed by the request's key text rather than its digest, so a repeated request is
// answered without hashing, a store read or a JSON.parse. It is bounded by entries and bytes,
// keeps each entry's expiry (TTL), and is cleared by a purge (in shared mode a purge on another
// replica arrives over Redis pub/sub). Entries are frozen: every hit replays the same objects.
import type { ChatEvent } from "../chat/types";
import type { CacheEntry, PurgeFilter } from "./types";

export interface HotEntry {
  entry: CacheEntry;
  /** the store's key (sha256 of the key text), for the store's last-use order */
  hash: string;
  model: string;
  keyId: string;
  /** ms since epoch the entry stops answering */
  expires: number;
  bytes: number;
}

export const HOT_MAX_ENTRIES = 1024;
export const HOT_MAX_BYTES = 32 * 1024 * 1024;

export class HotCache {
  // a Map iterates in insertion order: re-inserting on use keeps the least recently used first
  private readonly m = new Map<string, HotEntry>();
  private bytes = 0;
  private readonly perModel = new Map<string, number>();

  constructor(
    private readonly maxEntries = HOT_MAX_ENTRIES,
    private readonly maxBytes = HOT_MAX_BYTES,
  ) {}

  get size(): number {
    return this.m.size;
  }

  /** The live entry for this key text (moved to most recently used), or undefined. */
  get(text: string, now: number): HotEntry | undefined {
    const h = this.m.get(text);
    if (!h) return undefined;
    if (h.expires <= now) {
      this.drop(text);
      return undefined;
    }
    this.m.delete(text);
    this.m.set(text, h);
    return h;
  }

  /** Keep `h`; `modelMax` is its model's maxEntries, which memory keeps too (the store evicts
   * the same least recently used answers, since every use passes through here). */
  set(text: string, h: HotEntry, modelMax: number): void {
    this.drop(text);
    if (h.bytes > this.maxBytes / 8) return; // one huge answer would push out many small ones
    freezeEntry(h.entry);
    this.m.set(text, h);
    this.bytes += h.bytes;
    const n = (this.perModel.get(h.model) ?? 0) + 1;
    this.perModel.set(h.model, n);
    if (n > modelMax) {
      for (const [k, v] of this.m) if (v.model === h.model && this.drop(k) && (this.perModel.get(h.model) ?? 0) <= modelMax) break;
    }
    while (this.m.size > this.maxEntries || this.bytes > this.maxBytes) this.drop(this.m.keys().next().value as string);
  }

  purge(f: PurgeFilter): void {
    for (const [k, v] of this.m) {
      if ((f.model === undefined || v.model === f.model) && (f.keyId === undefined || v.keyId === f.keyId)) this.drop(k);
    }
  }

  private drop(text: string): boolean {
    const v = this.m.get(text);
    if (!v) return false;
    this.m.delete(text);
    this.bytes -= v.bytes;
    this.perModel.set(v.model, (this.perModel.get(v.model) ?? 1) - 1);
    return true;
  }
}

/** Freeze what a replay hands to the renderers, so no request can change another's answer. */
function freezeEntry(e: CacheEntry): void {
  if (Object.isFrozen(e)) return;
  if (e.body.kind === "chat") freezeEvents(e.body.events);
  else {
    for (const v of e.body.vectors) Object.freeze(v);
    Object.freeze(e.body.vectors);
  }
  Object.freeze(e.body);
  Object.freeze(e);
}

function freezeEvents(events: ChatEvent[]): void {
  for (const ev of events) deepFreeze(ev);
  Object.freeze(events);
}

function deepFreeze(o: object): void {
  Object.freeze(o);
  for (const v of Object.values(o)) if (v !== null && typeof v === "object" && !Object.isFrozen(v)) deepFreeze(v);
}

// Map a JSON pointer back to the YAML node it came from, for file:line:col in messages.
import { isAlias, isMap, isScalar, isSeq, type Document, type LineCounter, type Node } from "yaml";
import type { SourcePos } from "./types";
import { splitPointer } from "./pointer";

/**
 * The node at `pointer` below `root`, or the deepest existing ancestor when the path does not
 * exist (a missing required field points at its parent). With `atKey`, the last segment names
 * a map key and its key node is returned.
 */
export function locateNode(doc: Document, root: Node | null | undefined, pointer: string, atKey = false): Node | undefined {
  if (!root) return undefined;
  const segs = splitPointer(pointer);
  let cur: unknown = root;
  for (let i = 0; i < segs.length; i++) {
    if (isAlias(cur)) cur = cur.resolve(doc);
    const seg = segs[i];
    if (isMap(cur)) {
      const pair = cur.items.find((p) => keyText(p.key) === seg);
      if (!pair) break;
      if (atKey && i === segs.length - 1 && pair.key && typeof pair.key === "object") return pair.key as Node;
      if (pair.value == null || typeof pair.value !== "object") return (pair.key as Node) ?? (cur as Node);
      cur = pair.value;
    } else if (isSeq(cur)) {
      const item = cur.items[Number(seg)];
      if (item == null || typeof item !== "object") break;
      cur = item;
    } else break;
  }
  return cur as Node;
}

function keyText(k: unknown): string | undefined {
  if (isScalar(k)) return String(k.value);
  if (k == null) return undefined;
  return String(k);
}

export function nodePos(file: string, lc: LineCounter, node: Node | undefined): SourcePos {
  const offset = node?.range?.[0] ?? 0;
  const { line, col } = lc.linePos(offset);
  return { file, line, column: col };
}

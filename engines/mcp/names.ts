// Catalog names of MCP tools: `<service>_<tool>`, the service name lower-cased, every character
// outside [a-zA-Z0-9_-] turned into `_`, the whole at most 64 characters (the limit most model
// APIs put on function names). A name that is too long, or that two (service, tool) pairs would
// share, gets a short hash of the pair instead of its tail, so it stays unique and is the same
// on every start for the same pair.
import { createHash } from "node:crypto";

export const MAX_TOOL_NAME = 64;
const HASH_LEN = 8;

export function serviceSlug(service: string): string {
  return service.toLowerCase().replace(/[^a-z0-9_-]/g, "_");
}

function toolSlug(tool: string): string {
  return tool.replace(/[^a-zA-Z0-9_-]/g, "_");
}

function pairHash(service: string, tool: string): string {
  return createHash("sha256").update(`${service}\0${tool}`).digest("hex").slice(0, HASH_LEN);
}

/** The plain name (may be too long or shared). */
export function plainName(service: string, tool: string): string {
  return `${serviceSlug(service)}_${toolSlug(tool)}`;
}

/** The hashed form: a prefix of the plain name, `_`, and the pair's hash; always ≤ 64. */
export function hashedName(service: string, tool: string): string {
  const head = plainName(service, tool).slice(0, MAX_TOOL_NAME - HASH_LEN - 1);
  return `${head}_${pairHash(service, tool)}`;
}

export interface NamedPair {
  service: string;
  tool: string;
}

/**
 * Names for a whole catalog. Pairs are taken in (service, tool) order so the result does not
 * depend on which service connected first; the first pair keeps a plain name, later pairs that
 * would share it (or a reserved built-in name) get the hashed form.
 */
export function assignNames<T extends NamedPair>(pairs: T[], reserved: ReadonlySet<string>): Map<T, string> {
  const sorted = [...pairs].sort((a, b) => (a.service === b.service ? cmp(a.tool, b.tool) : cmp(a.service, b.service)));
  const taken = new Set(reserved);
  const out = new Map<T, string>();
  for (const p of sorted) {
    let name = plainName(p.service, p.tool);
    if (name.length > MAX_TOOL_NAME || taken.has(name)) name = hashedName(p.service, p.tool);
    taken.add(name);
    out.set(p, name);
  }
  return out;
}

const cmp = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0);

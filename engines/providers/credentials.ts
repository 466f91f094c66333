// Moved to engines/secrets/refs.ts; kept so existing imports keep working.
export { resolveSecretRef, describeMissing, clearSecretCache } from "../secrets/refs";

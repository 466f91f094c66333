// The store's raw SQL is written once, in SQLite's dialect ("?" placeholders, quoted mixed-case
// table and column names). The PostgreSQL schema (prisma/postgres/schema.prisma, derived) maps
// every table and column to its lower-case name, so the same statement runs on PostgreSQL once
// its quoted identifiers are lower-cased and its placeholders numbered. This wrapper does that
// for $executeRawUnsafe / $queryRawUnsafe, inside interactive transactions too; model queries
// pass through untouched.
const cache = new Map<string, string>();

export function toPgSql(sql: string): string {
  let out = cache.get(sql);
  if (out !== undefined) return out;
  let n = 0;
  out = sql
    .replace(/"([A-Za-z_][A-Za-z0-9_]*)"/g, (_, id: string) => `"${id.toLowerCase()}"`)
    .replace(/\?/g, () => `$${++n}`);
  if (cache.size > 2000) cache.clear();
  cache.set(sql, out);
  return out;
}

const RAW = new Set(["$executeRawUnsafe", "$queryRawUnsafe"]);

/** A Prisma client (or transaction client) whose raw SQL is translated to PostgreSQL. */
export function pgDialect<T extends object>(client: T): T {
  return new Proxy(client, {
    get(target, prop, receiver) {
      const v = Reflect.get(target, prop, receiver);
      if (typeof v !== "function") return v;
      if (typeof prop === "string" && RAW.has(prop)) return (sql: string, ...args: unknown[]) => v.call(target, toPgSql(sql), ...args);
      if (prop === "$transaction") {
        return (arg: unknown, opts?: unknown) =>
          typeof arg === "function" ? v.call(target, (tx: object) => (arg as (t: object) => unknown)(pgDialect(tx)), opts) : v.call(target, arg, opts);
      }
      return v.bind(target);
    },
  });
}

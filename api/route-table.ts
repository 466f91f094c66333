// The route table the server holds itself to: every route a router or the inference listener
// serves must have its line in api/openapi/catalogue.ts (access, body schema), and a keyed route
// must say how it meets the gate (`gate`). createHandler checks it at start-up, so a route added
// without registering it never serves a request: the server refuses to start, naming the route.
//
// Two HTTP stacks serve these routes, on purpose: the inference routes (chat, completions,
// responses, messages, embeddings, the Ollama POSTs: the hot path a gateway is measured on) go
// through the lean listener (inference-listener.ts: a path lookup and a plain context), every
// other route through Koa and @koa/router. Koa's per-request context graph, middleware
// composition and router scan are a cost the hot routes pay on every request (the gateway bench
// shows it); the other routes keep Koa's routing and middleware, where that cost does not matter. Both read the same table here, give the route code
// the same HttpContext (http-context.ts) and meet the same gate.
import type Router from "@koa/router";
import type { InferenceRoute } from "./inference-route";
import { routeDocs } from "./openapi/catalogue";

/** "METHOD path" of every route the routers and the inference listener serve (HEAD is implied by
 * GET; router.all() is written once as ALL). */
export function servedRoutes(routers: Router[], inference: InferenceRoute[]): Set<string> {
  const out = new Set<string>();
  for (const r of routers) {
    for (const layer of (r as unknown as { stack: Array<{ path: string | RegExp; methods: string[] }> }).stack) {
      if (typeof layer.path !== "string") continue; // a pattern is a fallback (unknown /api/* paths answer Ollama's 404), not a route
      const methods = layer.methods.filter((m) => m !== "HEAD");
      if (methods.length > 5) out.add(`ALL ${layer.path}`);
      else for (const m of methods) out.add(`${m} ${layer.path}`);
    }
  }
  // a path a router serves for ALL methods (/mcp) is that one route, whichever stack serves its POSTs
  for (const route of inference) if (!out.has(`ALL ${route.path}`)) out.add(`POST ${route.path}`);
  return out;
}

/** Throws, naming each route, when a served route is not in the catalogue or a keyed route does
 * not say how it meets the gate. */
export function assertRegistered(served: Set<string>): void {
  const docs = new Map(routeDocs.map((d) => [`${d.method.toUpperCase()} ${d.path}`, d]));
  const problems: string[] = [];
  for (const r of served) {
    const d = docs.get(r);
    if (!d) problems.push(`${r} is not in the route table (api/openapi/catalogue.ts)`);
    else if (d.access === "key" && !d.gate) problems.push(`${r} is keyed but does not say how it meets the gate (gate: "call" | "use")`);
  }
  if (problems.length) throw new Error(`unregistered routes: ${problems.join("; ")}`);
}

/** Which protocol a route belongs to, from its pattern (the metrics' protocol label). */
export function protocolOf(route: string): string {
  if (route.startsWith("/v1/messages")) return "anthropic";
  if (route.startsWith("/v1/api-keys") || route.startsWith("/v1/audit-logs")) return "gateway";
  if (route.startsWith("/v1/")) return "openai";
  if (route.startsWith("/api/")) return "ollama";
  if (route === "/mcp" || route.startsWith("/mcp/")) return "mcp";
  if (route.startsWith("/agents") || route.startsWith("/tasks")) return "agents";
  if (route.startsWith("/admin/")) return "admin";
  return "http";
}

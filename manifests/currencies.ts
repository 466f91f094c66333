// Plan-time check across objects: a budgeted ApiKey whose budget currency no declared rate
// (Server.spec.exchangeRates) connects with a priced Provider's currency is refused, as key
// creation refuses it, so spend is never counted at a wrong rate. The state checked is the one
// the plan leaves (the store, with the plan's creates, updates and deletes); only pairs that
// involve an object of this document are reported. A priced Provider in a currency other than USD
// also needs a rate to USD: the audit log's cost_usd (and the spend metric) is in USD. Keys of one
// organization's roll-up (user -> team -> organization) count in one currency.
import type { StoredObject } from "../prisma/resource-store";
import type { DesiredObject, ManifestIssue, PlannedChange } from "./types";
import { missingRateMessage, unconvertible, type ExchangeRate } from "../schemas/kinds/currency";
import { rollupConflictMessage, rollupCurrencyConflict } from "../schemas/kinds/api-key";
import { ManifestError } from "./errors";

export function checkCurrencies(existing: StoredObject[], objects: DesiredObject[], changes: PlannedChange[]): void {
  if (!objects.some((o) => o.kind === "ApiKey" || o.kind === "Provider" || o.kind === "Server")) return;
  const k = (kind: string, name: string) => `${kind}/${name}`;
  const state = new Map<string, { kind: string; name: string; spec: any; doc?: DesiredObject }>();
  for (const o of existing) state.set(k(o.kind, o.name), { kind: o.kind, name: o.name, spec: o.spec });
  for (const o of objects) state.set(k(o.kind, o.name), { kind: o.kind, name: o.name, spec: o.spec, doc: o });
  for (const c of changes) if (c.action === "delete") state.delete(k(c.kind, c.name));
  const all = [...state.values()];
  const server = all.find((o) => o.kind === "Server");
  const rates = server?.spec?.exchangeRates as ExchangeRate[] | undefined;
  const providers = all.filter((o) => o.kind === "Provider");
  const issues: ManifestIssue[] = [];
  for (const key of all) {
    if (key.kind !== "ApiKey" || !key.spec?.budget_limits) continue;
    const budget: string = key.spec.budget_limits.currency ?? "USD";
    // report it on the key when the key is in the document, else on the Provider or Server that opened the gap
    const gap = unconvertible(budget, providers, rates);
    if (!gap) continue;
    const at = key.doc ?? providers.find((p) => p.name === gap.provider)?.doc ?? server?.doc;
    if (!at) continue;
    issues.push({
      severity: "error",
      path: at.kind === "ApiKey" ? "/spec/budget_limits/currency" : at.kind === "Provider" ? "/spec/currency" : "/spec/exchangeRates",
      message: `ApiKey/${key.name}: ${missingRateMessage(budget, gap.price, gap.provider)}`,
      pos: at.pos,
      kind: at.kind,
      name: at.name,
    });
  }
  // one currency along each roll-up (user -> team -> organization), judged for the document's keys
  const keys = all.filter((o) => o.kind === "ApiKey");
  for (const key of keys) {
    if (!key.doc) continue;
    const clash = rollupCurrencyConflict(key, keys);
    if (!clash) continue;
    issues.push({
      severity: "error",
      path: "/spec/budget_limits/currency",
      message: `ApiKey/${key.name} ${rollupConflictMessage(key.spec?.budget_limits?.currency ?? "USD", clash)}`,
      pos: key.doc.pos,
      kind: key.doc.kind,
      name: key.doc.name,
    });
  }
  for (const p of providers) {
    const gap = unconvertible("USD", [p], rates);
    if (!gap) continue;
    const at = p.doc ?? server?.doc;
    if (!at) continue;
    issues.push({
      severity: "error",
      path: at.kind === "Provider" ? "/spec/currency" : "/spec/exchangeRates",
      message: `Provider/${p.name}: prices in ${gap.price} need a rate to USD in Server.spec.exchangeRates (the audit log reports each request's cost in USD, as cost_usd), e.g. {from: ${gap.price}, to: USD, rate: …}`,
      pos: at.pos,
      kind: at.kind,
      name: at.name,
    });
  }
  if (issues.length) throw new ManifestError(issues);
}

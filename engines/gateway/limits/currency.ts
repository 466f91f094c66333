// Spend in the key's budget currency: a request's price (in its Provider's currency, default USD)
// is converted with the rates Server.spec.exchangeRates declares. Counters, limits, reports and
// audit rows of a key are all in that currency. A budgeted key with no rate for the pair is
// refused (key creation and plan/apply refuse it earlier; this catches a rate removed since).
import type { ExchangeRate } from "../../../schemas/kinds/currency";
import { rateBetween } from "../../../schemas/kinds/currency";
import { SvcError } from "../../errors";
import type { KeyEntry } from "../keys";
import type { Estimate } from "./types";

/** The currency a key's spend is counted in: its budget's (default USD). */
export function keyCurrency(k: KeyEntry): string {
  return k.spec.budget_limits?.currency ?? "USD";
}

/** `budgeted(k, now)` is asked only when there is no rate (the common same-currency case makes no call). */
export function toKeyCurrency(k: KeyEntry, est: Estimate, rates: readonly ExchangeRate[] | undefined, budgeted: (k: KeyEntry, now: number) => boolean, now: number): { est: Estimate; rate: number } {
  const from = est.currency ?? "USD";
  const to = keyCurrency(k);
  if (from === to) return { est, rate: 1 };
  const rate = rateBetween(rates, from, to);
  if (rate === undefined) {
    // an unbudgeted key counts in the price currency: there is no budget a wrong rate could break
    if (!budgeted(k, now)) return { est, rate: 1 };
    throw new SvcError("forbidden", "permission_denied", `model ${est.model} is priced in ${from} and no exchange rate from ${from} to ${to} (this key's budget currency) is declared in Server.spec.exchangeRates; the request was not sent`, "model");
  }
  return { est: { ...est, spend: Math.ceil(est.spend * rate) }, rate };
}

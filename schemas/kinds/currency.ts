// Currencies: ISO 4217 codes (budget_limits.currency, Provider.spec.currency) and the exchange
// rates a Server manifest declares (Server.spec.exchangeRates), with the one lookup every user of
// them shares (key creation, plan/apply, the limits that convert spend).
import { Type, type Static } from "@sinclair/typebox";

/** ISO 4217 alphabetic codes in use (funds and precious metals included; XTS/XXX left out). */
export const ISO_4217 = (
  "AED AFN ALL AMD ANG AOA ARS AUD AWG AZN BAM BBD BDT BGN BHD BIF BMD BND BOB BOV BRL BSD BTN BWP BYN BZD " +
  "CAD CDF CHE CHF CHW CLF CLP CNY COP COU CRC CUC CUP CVE CZK DJF DKK DOP DZD EGP ERN ETB EUR FJD FKP GBP GEL " +
  "GHS GIP GMD GNF GTQ GYD HKD HNL HTG HUF IDR ILS INR IQD IRR ISK JMD JOD JPY KES KGS KHR KMF KPW KRW KWD KYD " +
  "KZT LAK LBP LKR LRD LSL LYD MAD MDL MGA MKD MMK MNT MOP MRU MUR MVR MWK MXN MXV MYR MZN NAD NGN NIO NOK NPR " +
  "NZD OMR PAB PEN PGK PHP PKR PLN PYG QAR RON RSD RUB RWF SAR SBD SCR SDG SEK SGD SHP SLE SLL SOS SRD SSP STN " +
  "SVC SYP SZL THB TJS TMT TND TOP TRY TTD TWD TZS UAH UGX USD USN UYI UYU UYW UZS VED VES VND VUV WST XAF XAG " +
  "XAU XBA XBB XBC XBD XCD XCG XDR XOF XPD XPF XPT XSU XUA YER ZAR ZMW ZWG ZWL"
).split(" ");

export const Currency = Type.Unsafe<string>({ type: "string", enum: ISO_4217, description: "An ISO 4217 currency code (USD, EUR, JPY, …)." });

export const ExchangeRate = Type.Object(
  {
    from: Currency,
    to: Currency,
    rate: Type.Number({ exclusiveMinimum: 0, description: "1 unit of `from` is `rate` units of `to`; the reverse pair is implied (1/rate) unless declared too." }),
  },
  { additionalProperties: false },
);
export type ExchangeRate = Static<typeof ExchangeRate>;

export const ExchangeRates = Type.Array(ExchangeRate, {
  description: "Rates that convert spend from a Provider's price currency into a key's budget currency. A budgeted key whose currency has no rate to a priced Provider's is refused.",
});

/** Units of `to` per unit of `from`: 1 for the same code, a declared pair, or the reverse of one. */
export function rateBetween(rates: readonly ExchangeRate[] | undefined, from: string, to: string): number | undefined {
  if (from === to) return 1;
  for (const r of rates ?? []) if (r.from === from && r.to === to) return r.rate;
  for (const r of rates ?? []) if (r.from === to && r.to === from) return 1 / r.rate;
  return undefined;
}

/** The currency a Provider's prices are in (spec.currency, default USD), and whether it prices anything. */
export function priceCurrency(spec: { currency?: string } | undefined): string {
  return spec?.currency ?? "USD";
}

const PRICE_FIELDS = ["inputPerMillion", "outputPerMillion", "perImage", "perVideoSecond", "perAudioMinute"] as const;
export function hasPrices(spec: { models?: Array<Record<string, unknown>> } | undefined): boolean {
  return (spec?.models ?? []).some((m) => PRICE_FIELDS.some((f) => typeof m[f] === "number"));
}

/** The message for a budget currency that no declared rate connects with a price currency. */
export function missingRateMessage(budget: string, price: string, provider: string): string {
  return `no exchange rate between ${price} (the prices of Provider ${provider}) and ${budget} (this key's budget currency): declare one in Server.spec.exchangeRates, e.g. {from: ${price}, to: ${budget}, rate: …}`;
}

/** The first priced Provider whose currency no declared rate connects with `budget`, if any. */
export function unconvertible(
  budget: string,
  providers: Iterable<{ name: string; spec: unknown }>,
  rates: readonly ExchangeRate[] | undefined,
): { provider: string; price: string } | undefined {
  for (const p of providers) {
    const spec = p.spec as { currency?: string; models?: Array<Record<string, unknown>> };
    const price = priceCurrency(spec);
    if (price !== budget && hasPrices(spec) && rateBetween(rates, price, budget) === undefined) return { provider: p.name, price };
  }
  return undefined;
}

/** Media prices are charged by the gate in USD: a Provider in another currency may not set them
 * (refused at validation rather than counted at a wrong rate). */
export function mediaPriceProblem(spec: { currency?: string; models?: Array<Record<string, unknown>> } | undefined): { path: string; message: string } | undefined {
  if (priceCurrency(spec) === "USD") return undefined;
  const i = (spec?.models ?? []).findIndex((m) => ["perImage", "perVideoSecond", "perAudioMinute"].some((f) => typeof m[f] === "number"));
  if (i < 0) return undefined;
  return { path: `/spec/models/${i}`, message: `media prices (perImage, perVideoSecond, perAudioMinute) are in USD; a Provider priced in ${spec!.currency} may set token prices only` };
}

// Which Provider serves a media capability. Only providers that declare it in
// spec.capabilities are used; with none, the route answers 503 model_unavailable naming what to
// configure. A request naming a model goes to a capable provider listing that model, else to
// the first capable provider (by name) that lists no models.
import type { ResourceStore } from "../../prisma/resource-store";
import type { ProviderSpec } from "../../schemas/kinds/provider";
import { SvcError } from "../errors";
import { describeMissing, resolveSecretRef } from "../providers/credentials";
import { providerTimeoutMs, upstreamBaseUrl } from "../providers/router";

export type MediaCapability = NonNullable<ProviderSpec["capabilities"]>[number];

export interface MediaTarget {
  provider: string;
  type: ProviderSpec["type"];
  baseUrl: string;
  headers: Record<string, string>;
  timeoutMs: number;
  /** the model name sent upstream (upstreamName when the Provider maps it) */
  upstreamModel?: string;
}

const WHAT: Record<MediaCapability, string> = {
  transcription: "speech transcription",
  image_generation: "image generation",
  image_edit: "image editing",
  image_upscale: "image upscaling",
  video: "video generation",
  credits: "a credit balance",
};

export function unavailable(cap: MediaCapability, model?: string): SvcError {
  const m = model ? ` for model ${JSON.stringify(model)}` : "";
  return new SvcError("unavailable",
    "model_unavailable",
    `no provider offers ${WHAT[cap]}${m}: add a Provider whose spec.capabilities lists "${cap}"${model ? ` and whose models include ${JSON.stringify(model)}` : ""} (svc config apply)`,
    model ? "model" : null,
  );
}

/** Capable providers, by name. */
export function capableProviders(store: ResourceStore, cap: MediaCapability): Array<{ name: string; spec: ProviderSpec }> {
  return store
    .list({ kind: "Provider" })
    .filter((o) => !o.deleting && ((o.spec as ProviderSpec).capabilities ?? []).includes(cap))
    .sort((a, b) => a.name.localeCompare(b.name))
    .map((o) => ({ name: o.name, spec: o.spec as ProviderSpec }));
}

/** The longest an image call to any Provider can run (its timeout), with a minute's margin. */
export function longestCallMs(store: ResourceStore): number {
  const each = store.list({ kind: "Provider" }).map((o) => providerTimeoutMs(o.spec as ProviderSpec));
  return Math.max(providerTimeoutMs({}), ...each) + 60_000;
}

/** A provider that could serve a media call, not yet resolved (its credential is read only for
 * the one the gate lets the call go to). */
export interface MediaCandidate {
  provider: string;
  spec: ProviderSpec;
  upstreamModel?: string;
}

/** The providers that could serve `cap` for `model`, in the order svc prefers them: a named
 * `provider` alone; else those listing the model, then those that list no models; without a
 * model, all of them. Throws 503 (what to configure) when there is none. */
export function candidatesFor(store: ResourceStore, cap: MediaCapability, model?: string, provider?: string): MediaCandidate[] {
  const all = capableProviders(store, cap).filter((p) => p.spec.type !== "local");
  let out: MediaCandidate[];
  if (provider) out = all.filter((p) => p.name === provider).map((p) => ({ provider: p.name, spec: p.spec, upstreamModel: model }));
  else if (model) {
    const listing: MediaCandidate[] = [];
    for (const p of all) {
      const m = (p.spec.models ?? []).find((x) => x.name === model);
      if (m) listing.push({ provider: p.name, spec: p.spec, upstreamModel: m.upstreamName ?? m.name });
    }
    out = [...listing, ...all.filter((p) => !(p.spec.models ?? []).length).map((p) => ({ provider: p.name, spec: p.spec, upstreamModel: model }))];
  } else out = all.map((p) => ({ provider: p.name, spec: p.spec }));
  if (!out.length) throw unavailable(cap, model);
  return out;
}

export function resolveTarget(name: string, spec: ProviderSpec, upstreamModel?: string): MediaTarget {
  const headers: Record<string, string> = {};
  if (spec.credential) {
    const v = resolveSecretRef(spec.credential);
    if (v === undefined) throw new SvcError("unavailable", "model_unavailable", `provider ${name} cannot be used: its credential does not resolve (${describeMissing(spec.credential)})`);
    if (spec.type === "anthropic") headers["x-api-key"] = v;
    else headers.authorization = `Bearer ${v}`;
  }
  for (const [k, ref] of Object.entries(spec.headers ?? {})) {
    const v = resolveSecretRef(ref);
    if (v === undefined) throw new SvcError("unavailable", "model_unavailable", `provider ${name} cannot be used: header ${k} does not resolve (${describeMissing(ref)})`);
    headers[k.toLowerCase()] = v;
  }
  return {
    provider: name,
    type: spec.type,
    baseUrl: (upstreamBaseUrl(spec.type, spec.baseUrl) ?? "").replace(/\/+$/, ""),
    headers,
    timeoutMs: providerTimeoutMs(spec),
    upstreamModel,
  };
}

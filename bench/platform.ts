// Platform benchmark: plan and apply of 1k and 10k objects, no-op re-apply of 10k, and
// save-to-applied latency in watch mode, all against a real svc on a temp SQLite store.
import { mkdtempSync, mkdirSync, writeFileSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { startSvc } from "../boot/start";
import { loadText, assertValid, makePlan, applyPlan } from "../manifests";
import { table, ms, percentile, type Section } from "./report";

function manifest(n: number, gen: number): string {
  const docs: string[] = [];
  for (let i = 0; i < n; i++) {
    if (i % 2 === 0) {
      docs.push(`apiVersion: svc/v1\nkind: Agent\nmetadata:\n  name: agent-${i}\n  labels: {team: t${i % 7}}\nspec:\n  instructions: "You are agent ${i}, revision ${gen}."\n  maxIterations: ${4 + (i % 5)}\n  toolPolicy:\n    allow: ["research_*"]\n`);
    } else {
      docs.push(`apiVersion: svc/v1\nkind: AccessPolicy\nmetadata:\n  name: policy-${i}\nspec:\n  version: "2024-01-01"\n  statements:\n    - effect: Allow\n      actions: ["chat:completions", "chat:stream"]\n      resources: ["model:m-${i % 13}", "provider:*"]\n`);
    }
  }
  return docs.join("---\n");
}

async function waitConverged(svc: any, n: number, timeoutMs = 120_000): Promise<number> {
  const t0 = performance.now();
  while (performance.now() - t0 < timeoutMs) {
    const objs = svc.store.list();
    let done = 0;
    for (const o of objs) if (o.status?.observedGeneration === o.generation) done++;
    if (done >= n) return performance.now() - t0;
    await new Promise((r) => setTimeout(r, 10));
  }
  return NaN;
}

async function planApply(svc: any, text: string, source: string) {
  const t0 = performance.now();
  const objects = assertValid(loadText(text, "bench.yaml"));
  const t1 = performance.now();
  const plan = makePlan(svc.store, objects, { source, prune: true });
  const t2 = performance.now();
  const res = await applyPlan(svc.store, plan, { confirm: true });
  const t3 = performance.now();
  return { parseMs: t1 - t0, planMs: t2 - t0, diffMs: t2 - t1, applyMs: t3 - t2, summary: plan.summary, revision: res.revision };
}

export async function platformBench(): Promise<Section> {
  const root = mkdtempSync(path.join(os.tmpdir(), "svc-bench-platform-"));
  const rows: (string | number)[][] = [];
  const data: Record<string, unknown> = {};
  try {
    for (const n of [1000, 10000]) {
      const run = await startSvc({ home: path.join(root, `h${n}`), port: 0, quickstart: false, log: quietLog });
      try {
        const text = manifest(n, 1);
        const first = await planApply(run.svc, text, "bench");
        const convergeMs = await waitConverged(run.svc, n);
        rows.push([`${n} objects: create`, ms(first.planMs), ms(first.applyMs), ms(convergeMs), `${first.summary.create} created`]);
        const noop = await planApply(run.svc, text, "bench");
        rows.push([`${n} objects: no-op re-apply`, ms(noop.planMs), ms(noop.applyMs), "-", `${noop.summary.unchanged} unchanged`]);
        const upd = await planApply(run.svc, manifest(n, 2), "bench");
        const convergeUpd = await waitConverged(run.svc, n);
        rows.push([`${n} objects: update all`, ms(upd.planMs), ms(upd.applyMs), ms(convergeUpd), `${upd.summary.update} updated`]);
        data[`n${n}`] = { create: first, createConvergeMs: convergeMs, noop, update: upd, updateConvergeMs: convergeUpd };
      } finally {
        await run.stop();
      }
    }

    // Watch mode: time from writing a file to the store's commit of the change.
    const dir = path.join(root, "watched");
    mkdirSync(dir);
    writeFileSync(path.join(dir, "agents.yaml"), manifest(10, 0));
    const run = await startSvc({ home: path.join(root, "hw"), port: 0, quickstart: false, watch: dir, log: quietLog });
    const lat: number[] = [];
    try {
      await new Promise((r) => setTimeout(r, 1500)); // initial scan and apply
      for (let i = 1; i <= 20; i++) {
        const applied = new Promise<number>((resolve) => {
          const on = () => { run.svc.store.off("change", on); resolve(performance.now()); };
          run.svc.store.on("change", on);
        });
        const t0 = performance.now();
        writeFileSync(path.join(dir, "agents.yaml"), manifest(10, i));
        const t1 = await Promise.race([applied, new Promise<number>((r) => setTimeout(() => r(NaN), 10_000))]);
        lat.push(t1 - t0);
        await new Promise((r) => setTimeout(r, 150));
      }
    } finally {
      await run.stop();
    }
    const okLat = lat.filter((x) => !Number.isNaN(x));
    data.watch = { samples: lat, p50: percentile(okLat, 50), p95: percentile(okLat, 95), missed: lat.length - okLat.length };
    const body = [
      table(["case", "plan (parse+validate+diff)", "apply (one transaction)", "controllers converged", "result"], rows),
      "",
      `Watch mode, save-to-applied (file write → store commit, includes the debounce), 20 saves of a 10-object file: ` +
        `p50 ${ms(percentile(okLat, 50))}, p95 ${ms(percentile(okLat, 95))}${lat.length - okLat.length ? `, ${lat.length - okLat.length} missed` : ""}.`,
      "",
      "Aims: 10k planned < 2 s, applied < 10 s, save-to-applied < 300 ms.",
    ].join("\n");
    return { title: "Platform: plan, apply, watch", body, data };
  } finally {
    rmSync(root, { recursive: true, force: true });
  }
}

const quietLog = { info() {}, warn() {}, error() {} };

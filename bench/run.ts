// Runs the benchmark sections named on the command line (default: all) and writes the report.
import path from "node:path";
import { fileURLToPath } from "node:url";
import { writeReport, type Section } from "./report";

const here = path.dirname(fileURLToPath(import.meta.url));
const all: Record<string, () => Promise<Section>> = {
  platform: async () => (await import("./platform")).platformBench(),
  gateway: async () => (await import("./gateway")).gatewayBench(),
  tracing: async () => (await import("./tracing")).tracingBench(),
  inference: async () => (await import("./inference")).inferenceBench(),
  mcp: async () => (await import("./mcp")).mcpBench(),
  agents: async () => (await import("./agents")).agentsBench(),
  scale: async () => (await import("./scale")).scaleBench(),
  memory: async () => (await import("./memory")).memoryBench(),
  usage: async () => (await import("./usage")).usageBench(),
  retention: async () => (await import("./retention")).retentionBench(),
  startup: async () => (await import("./startup")).startupBench(),
  replay: async () => (await import("./replay")).replayBench(),
  footprint: async () => (await import("./footprint")).footprintBench(),
  soak: async () => (await import("./soak")).soakBench(),
};

const wanted = process.argv.slice(2).filter((a) => !a.startsWith("-"));
const names = wanted.length ? wanted : Object.keys(all);
const sections: Section[] = [];
for (const name of names) {
  const run = all[name];
  if (!run) {
    console.error(`unknown section ${name}; sections: ${Object.keys(all).join(", ")}`);
    process.exit(1);
  }
  console.error(`bench: ${name} …`);
  const t0 = Date.now();
  try {
    sections.push(await run());
  } catch (e: any) {
    sections.push({ title: name, body: `Failed: ${e?.message ?? e}`, data: { error: String(e?.stack ?? e) } });
  }
  console.error(`bench: ${name} done in ${((Date.now() - t0) / 1000).toFixed(1)} s`);
}
const file = writeReport(path.join(here, "reports"), sections);
console.log(`report written to ${path.relative(process.cwd(), file)}`);
process.exit(0);

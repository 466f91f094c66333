// Dev tool (not a test): the bottom-up (self time per function) of a .cpuprofile, e.g. one from
//   node --cpu-prof --cpu-prof-dir=/tmp/gw-prof --import tsx bench/dev/gateway-writes.ts > /dev/null
//   node --import tsx bench/dev/gateway-writes-prof.ts /tmp/gw-prof/<file>.cpuprofile [top=25]
import { readFileSync } from "node:fs";
import path from "node:path";

interface Node {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  hitCount?: number;
}
const prof = JSON.parse(readFileSync(process.argv[2], "utf8")) as { nodes: Node[]; samples: number[]; timeDeltas: number[] };
const top = Number(process.argv[3] ?? 25);
const byId = new Map(prof.nodes.map((n) => [n.id, n]));
const self = new Map<string, number>();
let total = 0;
prof.samples.forEach((id, i) => {
  const n = byId.get(id)!;
  const f = n.callFrame;
  const at = f.url ? `${path.basename(f.url)}:${f.lineNumber + 1}` : "";
  const name = `${f.functionName || "(anonymous)"} ${at}`.trim();
  const dt = prof.timeDeltas[i] ?? 0;
  self.set(name, (self.get(name) ?? 0) + dt);
  total += dt;
});
console.log(`| self ms | % | function |\n| ---: | ---: | --- |`);
for (const [name, us] of [...self].sort((a, b) => b[1] - a[1]).slice(0, top)) console.log(`| ${(us / 1000).toFixed(1)} | ${((100 * us) / total).toFixed(1)} | ${name} |`);

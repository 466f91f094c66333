// The replay's worker thread (parallel.ts): one state's gate (ReplayWorld) judging the pages the
// replay sends, in order, answering each with its judgements; at the end, the alerts it counted.
import { parentPort, workerData } from "node:worker_threads";
import { ReplayWorld, type ReplayObject } from "./world";
import { judgePage } from "./judge";
import { decodePage, OutcomeTable, type PageColumns } from "./columns";

export type ToWorker = { page: PageColumns } | { close: true };
export type FromWorker =
  | { judged: import("./columns").JudgedColumns }
  | { counted: { alerts: Array<[string, Array<[string, number]>]>; webhooks: Array<[string, Array<[string, number]>]> } }
  | { error: string };

const port = parentPort!;
const world = new ReplayWorld(workerData.objects as ReplayObject[]);
const strings: string[] = [];
const outcomes = new OutcomeTable();
// refusals are Errors read only for their code: no stack to capture
Error.stackTraceLimit = 0;

const flat = (m: Map<string, Map<string, number>>) => [...m].map(([k, e]) => [k, [...e]] as [string, Array<[string, number]>]);

port.on("message", (m: ToWorker) => {
  try {
    if ("page" in m) {
      const page = decodePage(m.page, strings);
      const out = outcomes.encode(judgePage(world, page));
      port.postMessage({ judged: out } satisfies FromWorker, [out.outcome.buffer as ArrayBuffer, out.usd.buffer as ArrayBuffer]);
      return;
    }
    void world.close().then(
      () => port.postMessage({ counted: { alerts: flat(world.counted.alerts), webhooks: flat(world.counted.webhooks) } } satisfies FromWorker),
      (e) => port.postMessage({ error: String((e as Error)?.stack ?? e) } satisfies FromWorker),
    );
  } catch (e) {
    port.postMessage({ error: String((e as Error)?.stack ?? e) } satisfies FromWorker);
  }
});

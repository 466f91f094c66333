// HTTP requests by route pattern, status class and protocol. The route is the pattern that
// matched (/v1/chat/completions, /tasks/:id), never the raw path, so the series stay bounded;
// a request no route matched counts as route "unmatched". api/ names the route and its protocol
// (api/route-table.ts protocolOf): this counter knows no paths.
import { CounterFamily, type CounterCell } from "./cells";

const CLASSES = ["1xx", "2xx", "3xx", "4xx", "5xx"] as const;

export class HttpMetrics {
  readonly requests = new CounterFamily("svc_http_requests_total", "HTTP requests answered, by route pattern, status class and protocol.", ["route", "status_class", "protocol"]);
  /** per route: one cell per status class, made on first use */
  private readonly byRoute = new Map<string, Array<CounterCell | undefined>>();

  /** Count one answered request (called once its status is set). */
  count(route: string, status: number, protocol: string): void {
    let cells = this.byRoute.get(route);
    if (!cells) this.byRoute.set(route, (cells = []));
    let i = (status / 100) | 0;
    i = i >= 1 && i <= 5 ? i - 1 : 4; // a status outside 100-599 cannot be answered: count it as 5xx
    const c = (cells[i] ??= this.requests.cell(route, CLASSES[i], protocol));
    c.value++;
  }
}

// One HTTP request with exactly the headers given (fetch would not let a test choose Host), to
// 127.0.0.1:<port>. The body is sent as given when it is a string or a Buffer, else as JSON.
import http from "node:http";

export interface RawAnswer {
  status: number;
  headers: http.IncomingHttpHeaders;
  text: string;
  /** the body parsed as JSON, undefined when it is not JSON */
  json: any;
}

export function raw(port: number, method: string, path: string, opts: { headers?: Record<string, string>; body?: unknown } = {}): Promise<RawAnswer> {
  const b = opts.body;
  const body = b === undefined ? undefined : typeof b === "string" || Buffer.isBuffer(b) ? b : JSON.stringify(b);
  const headers: Record<string, string | number> = { ...(opts.headers ?? {}) };
  if (body !== undefined) {
    headers["content-length"] = Buffer.byteLength(body);
    if (!Object.keys(headers).some((k) => k.toLowerCase() === "content-type")) headers["content-type"] = "application/json";
  }
  return new Promise((resolve, reject) => {
    const req = http.request({ host: "127.0.0.1", port, method, path, headers, setHost: !Object.keys(headers).some((k) => k.toLowerCase() === "host"), agent: false }, (res) => {
      const chunks: Buffer[] = [];
      res.on("data", (c) => chunks.push(c));
      res.on("end", () => {
        const text = Buffer.concat(chunks).toString("utf8");
        let json: any;
        try {
          json = JSON.parse(text);
        } catch {
          json = undefined;
        }
        resolve({ status: res.statusCode ?? 0, headers: res.headers, text, json });
      });
      res.on("error", reject);
    });
    req.on("error", reject);
    req.end(body);
  });
}

// A loopback SMTP server (the smtp-server package) that keeps every message it accepts, with a
// small reader for the headers and plain-text body nodemailer writes.
import { SMTPServer } from "smtp-server";
import type { AddressInfo } from "node:net";

export interface ReceivedMail {
  mailFrom: string;
  rcptTo: string[];
  user?: string;
  headers: Record<string, string>;
  subject: string;
  to: string;
  text: string;
}

export interface SmtpSink {
  port: number;
  got: ReceivedMail[];
  close(): Promise<void>;
}

/** Listen on 127.0.0.1 (port 0: any free port). `reject(n)` may refuse the n-th message (451);
 * `hold(n)` keeps the client waiting for the answer to the n-th message until it resolves. */
export async function smtpSink(
  opts: { port?: number; users?: Record<string, string>; reject?: (n: number) => boolean; hold?: (n: number) => Promise<unknown> | undefined } = {},
): Promise<SmtpSink> {
  const got: ReceivedMail[] = [];
  let n = 0;
  const server = new SMTPServer({
    disabledCommands: ["STARTTLS"],
    allowInsecureAuth: true, // loopback only, no TLS in the test
    authOptional: !opts.users,
    logger: false,
    onAuth(auth, _session, cb) {
      if (opts.users && opts.users[auth.username ?? ""] === auth.password) return cb(null, { user: auth.username });
      cb(new Error("Invalid username or password"));
    },
    onData(stream, session, cb) {
      const chunks: Buffer[] = [];
      stream.on("data", (c: Buffer) => chunks.push(c));
      stream.on("end", async () => {
        const nth = ++n;
        await opts.hold?.(nth)?.catch(() => undefined);
        if (opts.reject?.(nth)) {
          const err = Object.assign(new Error("try again later"), { responseCode: 451 });
          return cb(err);
        }
        const mail = parse(Buffer.concat(chunks).toString("utf8"));
        got.push({
          mailFrom: session.envelope.mailFrom ? session.envelope.mailFrom.address : "",
          rcptTo: session.envelope.rcptTo.map((r) => r.address),
          user: typeof session.user === "string" ? session.user : undefined,
          ...mail,
        });
        cb();
      });
    },
  });
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(opts.port ?? 0, "127.0.0.1", () => resolve());
  });
  const port = (server.server.address() as AddressInfo).port;
  return { port, got, close: () => new Promise<void>((r) => server.close(() => r())) };
}

function parse(raw: string): Pick<ReceivedMail, "headers" | "subject" | "to" | "text"> {
  const [head, ...rest] = raw.split(/\r?\n\r?\n/);
  const headers: Record<string, string> = {};
  for (const line of head.replace(/\r?\n[ \t]+/g, " ").split(/\r?\n/)) {
    const i = line.indexOf(":");
    if (i > 0) headers[line.slice(0, i).toLowerCase()] = line.slice(i + 1).trim();
  }
  let text = rest.join("\n\n");
  if (/quoted-printable/i.test(headers["content-transfer-encoding"] ?? "")) {
    text = Buffer.from(text.replace(/=\r?\n/g, "").replace(/=([0-9A-F]{2})/g, (_, h) => String.fromCharCode(parseInt(h, 16))), "latin1").toString("utf8");
  }
  return { headers, subject: headers.subject ?? "", to: headers.to ?? "", text: text.replace(/\r\n/g, "\n") };
}

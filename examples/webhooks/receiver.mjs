// A minimal webhook receiver: `SVC_WEBHOOK_SECRET=… node examples/webhooks/receiver.mjs` listens
// on 127.0.0.1:8787, or on the port in PORT (plain http is allowed only for loopback receivers;
// use https elsewhere). Give svc the same secret as the key's webhook.secret reference.
import http from "node:http";
import { verifySvcWebhook } from "./verify.mjs";

const secret = process.env.SVC_WEBHOOK_SECRET;
if (!secret) throw new Error("set SVC_WEBHOOK_SECRET to the webhook.secret given to svc");
const seen = new Set(); // delivery is at least once: the same event id may arrive again

http
  .createServer((req, res) => {
    const chunks = [];
    req.on("data", (c) => chunks.push(c));
    req.on("end", () => {
      const body = Buffer.concat(chunks);
      if (!verifySvcWebhook(secret, req.headers, body)) return res.writeHead(401).end();
      const event = JSON.parse(body.toString("utf8")); // {id, type, created_at, data: {key_id, key_name, …}}
      if (!seen.has(event.id)) {
        seen.add(event.id);
        console.log(event.type, JSON.stringify(event.data));
      }
      res.writeHead(200).end(); // any 2xx marks it delivered; anything else is retried with backoff
    });
  })
  .listen(Number(process.env.PORT ?? 8787), "127.0.0.1", function () {
    console.log(`webhook receiver listening on http://127.0.0.1:${this.address().port}/`);
  });

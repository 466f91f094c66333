// Runs inside a test's network namespace (`ip netns exec <ns> node netns-forwarder.mjs <socket>`).
// Each connection on the Unix socket (a file, reachable across namespaces) names its target in a
// first line "<host> <port>\n"; the forwarder opens that TCP connection from inside the namespace
// and pipes both ways, so the server sees a caller on the namespace's address, not loopback.
import net from "node:net";

const [socketPath] = process.argv.slice(2);
net
  .createServer((client) => {
    let head = Buffer.alloc(0);
    const onData = (d) => {
      head = Buffer.concat([head, d]);
      const nl = head.indexOf(10);
      if (nl < 0) return;
      client.off("data", onData);
      client.pause();
      const [host, port] = head.subarray(0, nl).toString("utf8").trim().split(" ");
      const rest = head.subarray(nl + 1);
      const up = net.connect({ host, port: Number(port) }, () => {
        if (rest.length) up.write(rest);
        client.pipe(up);
        up.pipe(client);
        client.resume();
      });
      up.on("error", () => client.destroy());
      client.on("error", () => up.destroy());
      client.on("close", () => up.destroy());
      up.on("close", () => client.destroy());
    };
    client.on("data", onData);
    client.on("error", () => undefined);
  })
  .listen(socketPath, () => process.stdout.write("ready\n"));
// the test process holds stdin: when it goes away, so does the forwarder
process.stdin.on("end", () => process.exit(0));
process.stdin.on("error", () => process.exit(0));
process.stdin.resume();

import { connect, createServer, type AddressInfo, type Socket } from "node:net";

/**
 * A loopback SOCKS5 proxy (no authentication, CONNECT only) that records the destination each client asks
 * for (`host:port`, the name as the client sent it) and reaches loopback only; `hosts` maps names only it
 * can resolve to a loopback address.
 */
export interface Socks5Proxy {
  /** `socks5://127.0.0.1:<port>` */
  readonly url: string;
  readonly destinations: string[];
  stop(): Promise<void>;
}

export async function startSocks5Proxy(hosts: Record<string, string> = {}): Promise<Socks5Proxy> {
  const destinations: string[] = [];
  const sockets = new Set<Socket>();
  const server = createServer((client) => {
    sockets.add(client);
    client.once("close", () => sockets.delete(client));
    client.on("error", () => client.destroy());
    // Greeting: version 5, methods; answered with "no authentication".
    client.once("data", () => {
      client.write(Buffer.from([5, 0]));
      client.once("data", (req: Buffer) => {
        // VER CMD RSV ATYP DST.ADDR DST.PORT; ATYP 3 is a name, 1 an IPv4 address.
        const named = req[3] === 3;
        const length = named ? (req[4] ?? 0) : 4;
        const start = named ? 5 : 4;
        const host = named ? req.subarray(start, start + length).toString() : [...req.subarray(4, 8)].join(".");
        const port = req.readUInt16BE(start + length);
        destinations.push(`${host}:${port}`);
        const address = hosts[host] ?? host;
        const reply = (code: number): Buffer => Buffer.from([5, code, 0, 1, 0, 0, 0, 0, 0, 0]);
        if (req[1] !== 1 || !["127.0.0.1", "localhost"].includes(address)) {
          client.end(reply(2));
          return;
        }
        const upstream = connect({ host: address, port }, () => {
          client.write(reply(0));
          client.pipe(upstream).pipe(client);
        });
        sockets.add(upstream);
        upstream.once("close", () => {
          sockets.delete(upstream);
          client.destroy();
        });
        upstream.on("error", () => client.end(reply(5)));
      });
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return {
    url: `socks5://127.0.0.1:${(server.address() as AddressInfo).port}`,
    destinations,
    stop: async () => {
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      for (const socket of sockets) socket.destroy();
      await closed;
    },
  };
}

import { createServer, request, type IncomingMessage } from "node:http";
import { connect, type AddressInfo, type Socket } from "node:net";

/** One CONNECT tunnel the proxy opened. */
export interface Tunnel {
  /** What the client asked for: `host:port`. */
  target: string;
  /** The Proxy-Authorization header the client sent, if any. */
  authorization: string | undefined;
}

/**
 * A loopback HTTP proxy: CONNECT tunnels (for https servers) and absolute-URL requests forwarded (for http
 * ones), each recorded. It can stand in for DNS: `hosts` maps names only it can resolve to the loopback
 * address it connects to. It reaches loopback only, and refuses (403) any other target.
 */
export interface ConnectProxy {
  /** `http://127.0.0.1:<port>` */
  readonly url: string;
  readonly tunnels: Tunnel[];
  /** The `host:port` of each request forwarded (not tunnelled). */
  readonly forwarded: string[];
  stop(): Promise<void>;
}

export async function startConnectProxy(hosts: Record<string, string> = {}): Promise<ConnectProxy> {
  const tunnels: Tunnel[] = [];
  const forwarded: string[] = [];
  const sockets = new Set<Socket>();
  const LOOPBACK = ["127.0.0.1", "::1", "localhost"];
  const track = (socket: Socket): void => {
    sockets.add(socket);
    socket.once("close", () => sockets.delete(socket));
  };
  const server = createServer((req, res) => {
    const target = URL.parse(req.url ?? "");
    const host = target === null ? undefined : (hosts[target.hostname] ?? target.hostname);
    if (target === null || host === undefined || !LOOPBACK.includes(host)) {
      res.writeHead(403).end();
      return;
    }
    forwarded.push(target.host);
    const upstream = request(
      { host, port: target.port, path: target.pathname + target.search, method: req.method, headers: req.headers },
      (answer) => {
        res.writeHead(answer.statusCode ?? 502, answer.headers);
        answer.pipe(res);
      },
    );
    upstream.once("error", () => res.destroy());
    req.pipe(upstream);
  });
  server.on("connect", (req: IncomingMessage, client: Socket, head: Buffer) => {
    track(client);
    const target = req.url ?? "";
    tunnels.push({ target, authorization: req.headers["proxy-authorization"] });
    const colon = target.lastIndexOf(":");
    const name = target.slice(0, colon).replace(/^\[|\]$/g, "");
    const host = hosts[name] ?? name;
    // A test proxy reaches this machine only.
    if (!LOOPBACK.includes(host)) {
      client.end("HTTP/1.1 403 Forbidden\r\n\r\n");
      return;
    }
    const upstream = connect({ host, port: Number(target.slice(colon + 1)) });
    track(upstream);
    let connected = false;
    upstream.once("error", () => {
      if (connected) client.destroy();
      else client.end("HTTP/1.1 502 Bad Gateway\r\n\r\n");
    });
    client.once("error", () => upstream.destroy());
    client.once("close", () => upstream.destroy());
    upstream.once("close", () => connected && client.destroy());
    upstream.once("connect", () => {
      connected = true;
      client.write("HTTP/1.1 200 Connection Established\r\n\r\n");
      if (head.length > 0) upstream.write(head);
      client.pipe(upstream).pipe(client);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    tunnels,
    forwarded,
    stop: async () => {
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      for (const socket of sockets) socket.destroy();
      server.closeAllConnections();
      await closed;
    },
  };
}

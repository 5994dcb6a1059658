import { createConnection, createServer, type Server, type Socket } from "node:net";
import type { AddressInfo } from "node:net";

/**
 * A loopback TCP proxy that can be taken down and brought back on the same port: a server that goes away
 * (connections refused) and returns at the same address, as a restarted Prometheus does.
 */
export interface TcpProxy {
  /** `http://127.0.0.1:<port>` */
  readonly url: string;
  /** Closes the listener and every open connection; new connections are refused until `up`. */
  down(): Promise<void>;
  /** Listens again on the same port. */
  up(): Promise<void>;
  stop(): Promise<void>;
  /** Connections accepted so far. */
  connections(): number;
}

/** Forwards 127.0.0.1:<free port> to `target` (`host:port`). */
export async function startTcpProxy(target: string): Promise<TcpProxy> {
  const [host = "127.0.0.1", portText = ""] = target.split(":");
  const targetPort = Number(portText);
  const sockets = new Set<Socket>();
  let server: Server | undefined;
  let accepted = 0;

  const listen = async (port: number): Promise<number> => {
    const next = createServer((client) => {
      accepted++;
      const upstream = createConnection({ host, port: targetPort });
      for (const socket of [client, upstream]) {
        sockets.add(socket);
        socket.once("close", () => sockets.delete(socket));
        socket.on("error", () => {
          client.destroy();
          upstream.destroy();
        });
      }
      client.pipe(upstream).pipe(client);
    });
    await new Promise<void>((resolve, reject) => {
      next.once("error", reject);
      next.listen(port, "127.0.0.1", resolve);
    });
    server = next;
    return (next.address() as AddressInfo).port;
  };
  const down = async (): Promise<void> => {
    const current = server;
    server = undefined;
    if (current === undefined) return;
    const closed = new Promise<void>((resolve) => current.close(() => resolve()));
    for (const socket of sockets) socket.destroy();
    await closed;
  };

  const port = await listen(0);
  return {
    url: `http://127.0.0.1:${port}`,
    down,
    up: async () => {
      if (server === undefined) await listen(port);
    },
    stop: down,
    connections: () => accepted,
  };
}

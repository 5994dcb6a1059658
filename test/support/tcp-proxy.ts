import { createConnection, createServer, type Server, type Socket } from "node:net";
import type { AddressInfo } from "node:net";

/**
 * A loopback TCP proxy that can be taken down and brought back on the same port: a server that goes away
 * (connections refused) and returns at the same address, as a restarted Prometheus does. It can also turn the
 * connections open at one moment into black holes, as a load balancer that failed over does.
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
  /**
   * Stops forwarding on every connection open now, both ways, and keeps both of its sockets open: what is sent
   * into one is read and dropped, and neither end learns that the other closed, as with a load balancer that
   * failed over without resetting its old connections. New connections are forwarded as before.
   */
  blackHole(): void;
  /** Bytes forwarded so far, both ways (none once a connection is a black hole). */
  bytesForwarded(): number;
}

/** Forwards 127.0.0.1:<free port> to `target` (`host:port`). */
export async function startTcpProxy(target: string): Promise<TcpProxy> {
  const [host = "127.0.0.1", portText = ""] = target.split(":");
  const targetPort = Number(portText);
  const sockets = new Set<Socket>();
  /** The connections forwarded now, each as the client's socket and the one to the target. */
  const open = new Set<[Socket, Socket]>();
  let server: Server | undefined;
  let accepted = 0;
  let forwarded = 0;

  const listen = async (port: number): Promise<number> => {
    const next = createServer((client) => {
      accepted++;
      const upstream = createConnection({ host, port: targetPort });
      const pair: [Socket, Socket] = [client, upstream];
      open.add(pair);
      for (const socket of pair) {
        sockets.add(socket);
        socket.once("close", () => {
          sockets.delete(socket);
          open.delete(pair);
        });
        socket.on("error", () => {
          if (!open.has(pair)) return;
          client.destroy();
          upstream.destroy();
        });
        socket.on("data", (chunk: Buffer) => {
          if (open.has(pair)) forwarded += chunk.length;
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
    blackHole: () => {
      for (const pair of open) {
        const [client, upstream] = pair;
        open.delete(pair);
        client.unpipe(upstream);
        upstream.unpipe(client);
        // Read and dropped, so that neither side's writes stall; an end or error on one side stays there.
        for (const socket of pair) socket.resume();
      }
    },
    bytesForwarded: () => forwarded,
  };
}

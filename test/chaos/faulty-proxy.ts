import { createConnection, createServer, type Socket } from "node:net";
import type { AddressInfo } from "node:net";

/** What the proxy does with a connection: forward it, reset it (a server that is down), or hold it unanswered. */
export type ProxyMode = "up" | "down" | "hang";

/** A loopback TCP proxy in front of a server, whose behaviour a test switches: a Prometheus that fails. */
export interface FaultyProxy {
  /** `http://127.0.0.1:<port>` */
  readonly url: string;
  /** New connections follow `mode`; switching ends every open connection, as a server going away would. */
  setMode(mode: ProxyMode): void;
  stop(): Promise<void>;
}

/** Listens on a free loopback port and forwards to `target` (`host:port`) while `up`. */
export async function startFaultyProxy(target: string): Promise<FaultyProxy> {
  const [host = "127.0.0.1", portText = ""] = target.split(":");
  const port = Number(portText);
  const sockets = new Set<Socket>();
  let mode: ProxyMode = "up";
  const track = (socket: Socket) => {
    sockets.add(socket);
    socket.once("close", () => sockets.delete(socket));
    socket.on("error", () => socket.destroy());
  };
  const server = createServer((client) => {
    track(client);
    if (mode === "down") {
      client.resetAndDestroy();
      return;
    }
    if (mode === "hang") return;
    const upstream = createConnection({ host, port });
    track(upstream);
    upstream.on("error", () => client.destroy());
    client.on("error", () => upstream.destroy());
    client.pipe(upstream).pipe(client);
  });
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(0, "127.0.0.1", resolve);
  });
  const { port: own } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${own}`,
    setMode(next) {
      mode = next;
      for (const socket of sockets) socket.destroy();
    },
    stop: async () => {
      for (const socket of sockets) socket.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

import { createServer, type Socket } from "node:net";
import type { AddressInfo } from "node:net";

/** A loopback listener that accepts connections and never answers: a Prometheus that hangs. */
export interface HangingServer {
  /** `http://127.0.0.1:<port>` */
  readonly url: string;
  /** Connections accepted so far. */
  connections(): number;
  stop(): Promise<void>;
}

export async function startHangingServer(): Promise<HangingServer> {
  const sockets = new Set<Socket>();
  let accepted = 0;
  const server = createServer((socket) => {
    accepted++;
    sockets.add(socket);
    socket.on("error", () => {});
    socket.on("close", () => sockets.delete(socket));
  });
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(0, "127.0.0.1", resolve);
  });
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    connections: () => accepted,
    stop: async () => {
      for (const socket of sockets) socket.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

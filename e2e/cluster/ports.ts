import { createServer, type Server } from "node:net";

/**
 * Asks the kernel for `count` distinct free loopback ports. All listeners are held open until every port is known,
 * so the ports differ from each other; another program could still take one before our binaries bind it, which
 * startup reports as a bind failure in that component's log.
 */
export async function freePorts(count: number): Promise<number[]> {
  const servers: Server[] = [];
  try {
    const ports: number[] = [];
    for (let i = 0; i < count; i++) {
      const server = createServer();
      servers.push(server);
      await new Promise<void>((resolve, reject) => {
        server.once("error", reject);
        server.listen(0, "127.0.0.1", resolve);
      });
      const address = server.address();
      if (address === null || typeof address === "string") throw new Error("free port: unexpected listener address");
      ports.push(address.port);
    }
    return ports;
  } finally {
    await Promise.all(servers.map((s) => new Promise<void>((resolve) => s.close(() => resolve()))));
  }
}

/** A free loopback port held by a listener of this process until `release`, so that no `freePorts` call meanwhile returns it. */
export interface ReservedPort {
  readonly port: number;
  /** Closes the listener: the port is free for its user to bind (another program could still take it first). */
  release(): Promise<void>;
}

/** Reserves one free loopback port (see {@link ReservedPort}). */
export async function reservePort(): Promise<ReservedPort> {
  const server = createServer();
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(0, "127.0.0.1", resolve);
  });
  const address = server.address();
  if (address === null || typeof address === "string") throw new Error("free port: unexpected listener address");
  let released: Promise<void> | undefined;
  return {
    port: address.port,
    release: () => (released ??= new Promise<void>((resolve) => server.close(() => resolve()))),
  };
}

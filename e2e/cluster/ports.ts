import { createServer } from "node:net";

/**
 * Asks the kernel for `count` distinct free loopback ports. All listeners are held open until every port is known,
 * so the ports differ from each other; another program could still take one before our binaries bind it, which
 * startup reports as a bind failure in that component's log.
 */
export async function freePorts(count: number): Promise<number[]> {
  const held: ReservedPort[] = [];
  try {
    for (let i = 0; i < count; i++) held.push(await reservePort());
    return held.map((r) => r.port);
  } finally {
    await Promise.all(held.map((r) => r.release()));
  }
}

/** A free loopback port held by a listener of this process until `release`, so that no `freePorts` call meanwhile returns it. */
export interface ReservedPort {
  readonly port: number;
  /** Closes the listener: the port is free for its user to bind (another program could still take it first). */
  release(): Promise<void>;
}

/**
 * Reserves one free loopback port (see {@link ReservedPort}). The placeholder serves nothing: a client that
 * connects meanwhile (Prometheus scraping a target whose server is not up yet) is disconnected at once, since
 * a listener's close waits for every connection it accepted to end.
 */
export async function reservePort(): Promise<ReservedPort> {
  const server = createServer((socket) => socket.destroy());
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

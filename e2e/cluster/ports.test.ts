/**
 * Reserved ports: held by a listener until released, and released even when something connected meanwhile.
 * The demo reserves the simulator's port before Prometheus starts, and Prometheus, told of that target, may
 * scrape it before the simulator takes it over: a connection to the placeholder must not hold `release` up.
 */
import assert from "node:assert/strict";
import { connect, createServer, type Socket } from "node:net";
import { describe, test } from "node:test";
import { setTimeout as sleep } from "node:timers/promises";
import { freePorts, reservePort } from "./ports.js";

/** Resolves with `promise`'s value, or rejects after `ms` naming `what`. */
async function within<T>(ms: number, what: string, promise: Promise<T>): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what}: not done after ${ms} ms`)), ms);
  });
  try {
    return await Promise.race([promise, timeout]);
  } finally {
    clearTimeout(timer);
  }
}

/** Opens a connection to `port` and leaves it open, as an HTTP client waiting for a scrape's answer does. */
async function connectAndWait(port: number): Promise<Socket> {
  const socket = connect(port, "127.0.0.1");
  socket.on("error", () => undefined);
  await new Promise<void>((resolve) => socket.once("connect", resolve));
  socket.write("GET /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n");
  return socket;
}

async function bindable(port: number): Promise<boolean> {
  const server = createServer();
  try {
    await new Promise<void>((resolve, reject) => {
      server.once("error", reject);
      server.listen(port, "127.0.0.1", resolve);
    });
    return true;
  } catch {
    return false;
  } finally {
    await new Promise<void>((resolve) => server.close(() => resolve()));
  }
}

describe("reservePort", () => {
  test("holds the port until released, then the port is free", async () => {
    const reserved = await reservePort();
    assert.equal(await bindable(reserved.port), false, "held while reserved");
    await reserved.release();
    assert.equal(await bindable(reserved.port), true, "free once released");
  });

  test("a client connected to the placeholder (a scrape) does not hold release up", async () => {
    const reserved = await reservePort();
    const client = await connectAndWait(reserved.port);
    try {
      await sleep(50);
      await within(2_000, "release with a connection open", reserved.release());
      assert.equal(await bindable(reserved.port), true, "free once released");
    } finally {
      client.destroy();
    }
  });

  test("release is idempotent", async () => {
    const reserved = await reservePort();
    await Promise.all([reserved.release(), reserved.release()]);
    await reserved.release();
  });
});

describe("freePorts", () => {
  test("distinct ports, all free once returned", async () => {
    const ports = await freePorts(5);
    assert.equal(new Set(ports).size, 5);
    for (const port of ports) assert.equal(await bindable(port), true, `port ${port} free`);
  });
});

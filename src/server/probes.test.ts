/**
 * The probes of a controller that can no longer do its job: the real Controller (fake informers, a
 * manual clock) behind the real HTTP server, wired as main.ts wires them. Each test wedges one part and
 * sees /healthz or /readyz turn.
 */
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { pino } from "pino";
import { Controller, DEFAULT_STUCK_AFTER_MS } from "../controller/controller.js";
import { FakeClock, flush } from "../controller/fake-clock.test-helpers.js";
import { FakeInformer } from "../controller/fake-informer.test-helpers.js";
import { objectKey } from "../object-keys.js";
import { startHttpServer } from "./http.js";

interface Thing {
  metadata: { name: string; namespace: string };
}

async function probes(reconcile: (key: string) => Promise<void>, synced?: boolean) {
  const clock = new FakeClock();
  const apps = new FakeInformer<Thing>([{ metadata: { namespace: "ns", name: "shop" } }]);
  if (synced !== undefined) apps.synced = synced;
  const log = pino({ level: "silent" });
  const controller = new Controller({ name: "test", reconcile, log, clock, syncPollMs: 10 });
  controller.watch(apps, objectKey);
  const server = await startHttpServer({
    host: "127.0.0.1",
    port: 0,
    ready: () => ({ ready: controller.cachesSynced() && controller.ready(), reason: "caches not synced" }),
    healthy: () => controller.health(),
    metrics: { contentType: "text/plain", metrics: () => Promise.resolve("") },
    log,
  });
  const get = async (path: string) => {
    const res = await fetch(`http://127.0.0.1:${server.port}${path}`);
    return `${res.status} ${(await res.text()).trim()}`;
  };
  return { clock, apps, controller, get, close: () => server.close() };
}

/** A reconcile that waits until released. */
function wedge() {
  let release: () => void = () => {};
  const started: string[] = [];
  const reconcile = (key: string) =>
    new Promise<void>((resolve) => {
      started.push(key);
      release = resolve;
    });
  return { reconcile, started, release: () => release() };
}

describe("probes", () => {
  test("/healthz turns when a worker is stuck past its bound, and back when it is freed", async () => {
    const w = wedge();
    const p = await probes(w.reconcile);
    const running = p.controller.run();
    await p.clock.advance(10);
    assert.deepEqual(w.started, ["ns/shop"]);
    assert.equal(await p.get("/healthz"), "200 ok");
    await p.clock.advance(DEFAULT_STUCK_AFTER_MS - 100);
    assert.equal(await p.get("/healthz"), "200 ok", "within the bound: still healthy");
    await p.clock.advance(1000);
    assert.match(
      await p.get("/healthz"),
      /^503 unhealthy: a worker is stuck: the reconcile of ns\/shop has run for 12\ds \(bound 120s\)$/,
    );
    w.release();
    await flush();
    assert.equal(await p.get("/healthz"), "200 ok");
    await p.controller.stop();
    await running;
    await p.close();
  });

  test("/healthz turns when a cache's watch has not recovered within its backoff ceiling", async () => {
    const p = await probes(() => Promise.resolve());
    const running = p.controller.run();
    await p.clock.advance(10);
    assert.equal(await p.get("/healthz"), "200 ok");
    p.apps.stalledReason = "canaryapps: list/watch failing for 61s (backoff ceiling 30s)";
    assert.equal(
      await p.get("/healthz"),
      "503 unhealthy: a cache stopped following the server: canaryapps: list/watch failing for 61s (backoff ceiling 30s)",
    );
    p.apps.stalledReason = undefined;
    assert.equal(await p.get("/healthz"), "200 ok");
    await p.controller.stop();
    await running;
    await p.close();
  });

  test("/healthz turns when the lease is lost but a reconcile still runs", async () => {
    const w = wedge();
    const p = await probes(w.reconcile);
    const running = p.controller.run();
    await p.clock.advance(10);
    assert.equal(await p.get("/healthz"), "200 ok");
    const abandoned = p.controller.abandon();
    assert.equal(await p.get("/healthz"), "503 unhealthy: the lease was lost but 1 reconcile(s) still run (ns/shop)");
    w.release();
    await abandoned;
    await running;
    assert.equal(await p.get("/healthz"), "200 ok", "nothing runs any more");
    await p.close();
  });

  test("/readyz waits for the caches: a standby whose caches have not synced is not ready", async () => {
    const p = await probes(() => Promise.resolve(), false);
    p.controller.startCaches();
    assert.equal(await p.get("/readyz"), "503 not ready: caches not synced");
    p.apps.synced = true;
    const running = p.controller.run();
    await p.clock.advance(20);
    assert.equal(await p.get("/readyz"), "200 ok");
    await p.controller.stop();
    await running;
    await p.close();
  });
});

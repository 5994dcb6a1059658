import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { pino } from "pino";
import { FakeInformer } from "./fake-informer.test-helpers.js";
import { ServedInformer } from "./served-informer.js";

type Obj = { metadata: { namespace: string; name: string; resourceVersion?: string } };
const log = pino({ level: "silent" });
const route = (name: string): Obj => ({ metadata: { namespace: "shop", name, resourceVersion: "1" } });
const settle = () => new Promise((resolve) => setImmediate(resolve));

describe("ServedInformer", () => {
  test("a kind not served: an empty cache, synced at once, and no informer is made (no request)", async () => {
    let made = 0;
    const informer = new ServedInformer<Obj>({
      isServed: () => Promise.resolve(false),
      make: () => {
        made += 1;
        return new FakeInformer<Obj>();
      },
      log,
    });
    let synced = 0;
    informer.onSynced(() => (synced += 1));
    assert.equal(informer.served(), undefined, "unknown before it started");
    assert.equal(informer.hasSynced(), false);
    informer.start();
    await settle();
    assert.equal(informer.served(), false);
    assert.equal(informer.hasSynced(), true);
    assert.equal(synced, 1);
    assert.equal(made, 0);
    assert.deepEqual(informer.list(), []);
    assert.equal(informer.get("shop", "web"), undefined);
    assert.equal(informer.size(), 0);
  });

  test("a kind served: the real informer, with the handlers registered before it was made", async () => {
    const inner = new FakeInformer<Obj>([route("web")]);
    const informer = new ServedInformer<Obj>({ isServed: () => Promise.resolve(true), make: () => inner, log });
    const added: string[] = [];
    let synced = 0;
    informer.onAdd((obj) => added.push(obj.metadata.name));
    informer.onSynced(() => (synced += 1));
    informer.start();
    await settle();
    assert.equal(informer.served(), true);
    assert.equal(inner.started, true);
    assert.equal(informer.get("shop", "web")?.metadata.name, "web");
    inner.set(route("api"));
    assert.deepEqual(added, ["web", "api"], "the first list's adds and the watch's reach the early handler");
    assert.equal(informer.hasSynced(), inner.hasSynced());
    await informer.stop();
    assert.equal(inner.stopped, true);
  });

  test("discovery that fails reads as not served, never as a stalled start", async () => {
    const informer = new ServedInformer<Obj>({
      isServed: () => Promise.reject(new Error("connection refused")),
      make: () => new FakeInformer<Obj>(),
      log,
    });
    informer.start();
    await settle();
    assert.equal(informer.served(), false);
    assert.equal(informer.hasSynced(), true);
  });
});

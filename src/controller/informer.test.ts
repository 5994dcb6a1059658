import { describe, test } from "node:test";
import assert from "node:assert/strict";
import { pino } from "pino";
import { FakeClock, flush } from "./fake-clock.test-helpers.js";
import { ListWatchInformer } from "./list-watch-informer.js";
import { createInformer, resourcePath } from "./create-informer.js";
import { handedEach, type ObjectList, type Watcher } from "../kube/list-watch.js";
import type { ObjectWithMeta } from "./informer.js";

interface Obj extends ObjectWithMeta {
  metadata: { name: string; namespace: string; resourceVersion: string };
  data?: string;
}

function obj(name: string, rv: string, data?: string, namespace = "ns"): Obj {
  return { metadata: { name, namespace, resourceVersion: rv }, data };
}

interface WatchCall {
  path: string;
  params: Record<string, string | number | boolean | undefined>;
  emit(type: string, object: unknown): void;
  done(err?: unknown): void;
  aborted: boolean;
}

/** Records watch requests; tests drive each one's events and end. */
class FakeWatcher implements Watcher {
  readonly calls: WatchCall[] = [];

  watch(
    path: string,
    params: Record<string, string | number | boolean | undefined>,
    callback: (type: string, object: unknown) => void,
    done: (err: unknown) => void,
  ): Promise<{ abort(): void }> {
    const call: WatchCall = {
      path,
      params,
      emit: (type, object) => callback(type, object),
      done: (err) => done(err ?? null),
      aborted: false,
    };
    this.calls.push(call);
    return Promise.resolve({
      abort: () => {
        call.aborted = true;
        // The real Watch reports an aborted stream through done as well.
        setImmediate(() => done(new DOMException("aborted", "AbortError")));
      },
    });
  }

  last(): WatchCall {
    const call = this.calls.at(-1);
    assert.ok(call, "a watch was started");
    return call;
  }
}

function logCapture(): { log: pino.Logger; lines: Record<string, unknown>[] } {
  const lines: Record<string, unknown>[] = [];
  const log = pino({ level: "debug" }, { write: (s: string) => lines.push(JSON.parse(s) as Record<string, unknown>) });
  return { log, lines };
}

interface Harness {
  informer: ListWatchInformer<Obj>;
  watcher: FakeWatcher;
  clock: FakeClock;
  lists: {
    count: number;
    /** The narrower selector of each list (undefined: the informer's own only). */
    selectors: (string | undefined)[];
    result: (narrower?: string) => Promise<ObjectList<Obj>>;
    /** Items handed over before the result settles, as a list read while it arrives hands them. */
    handedFirst?: Obj[];
  };
  events: string[];
  lines: Record<string, unknown>[];
}

function harness(
  initial: Obj[],
  listRv = "10",
  transform?: (o: Obj) => Obj,
  keep?: (o: Obj) => boolean,
  labelled?: (o: Obj) => boolean,
): Harness {
  const watcher = new FakeWatcher();
  const clock = new FakeClock();
  const { log, lines } = logCapture();
  const lists: Harness["lists"] = {
    count: 0,
    selectors: [],
    result: (): Promise<ObjectList<Obj>> => Promise.resolve({ metadata: { resourceVersion: listRv }, items: initial }),
  };
  const informer = new ListWatchInformer<Obj>({
    resource: "things",
    path: "/apis/x.io/v1/namespaces/ns/things",
    list: (narrower, each) => {
      lists.count++;
      lists.selectors.push(narrower);
      for (const item of lists.handedFirst ?? []) each(item);
      return handedEach(lists.result(narrower), each);
    },
    labelSelector: "app.kubernetes.io/managed-by=canaryapp",
    watcher,
    log,
    clock,
    watchTimeoutSeconds: () => 420,
    ...(transform !== undefined ? { transform } : {}),
    ...(keep !== undefined ? { keep } : {}),
    ...(labelled !== undefined ? { labelled } : {}),
  });
  const events: string[] = [];
  informer.onAdd((o) => events.push(`add ${o.metadata.name}@${o.metadata.resourceVersion}`));
  informer.onUpdate((o, old) =>
    events.push(`update ${o.metadata.name}@${old.metadata.resourceVersion}->${o.metadata.resourceVersion}`),
  );
  informer.onDelete((o) => events.push(`delete ${o.metadata.name}`));
  return { informer, watcher, clock, lists, events, lines };
}

describe("ListWatchInformer", () => {
  test("lists, syncs, then watches from the list's resourceVersion with the label selector", async () => {
    const h = harness([obj("a", "1"), obj("b", "2")]);
    assert.equal(h.informer.hasSynced(), false);
    h.informer.start();
    await flush();
    assert.equal(h.informer.hasSynced(), true);
    assert.deepEqual(h.events, ["add a@1", "add b@2"]);
    assert.equal(h.informer.get("ns", "a")?.metadata.resourceVersion, "1");
    assert.equal(h.informer.list().length, 2);
    assert.equal(h.informer.size(), 2);
    assert.equal(h.informer.list("other").length, 0);
    const call = h.watcher.last();
    assert.equal(call.path, "/apis/x.io/v1/namespaces/ns/things");
    assert.deepEqual(call.params, {
      resourceVersion: "10",
      allowWatchBookmarks: true,
      timeoutSeconds: "420",
      labelSelector: "app.kubernetes.io/managed-by=canaryapp",
    });
    await h.informer.stop();
  });

  test("applies watch events to the cache and calls handlers", async () => {
    const h = harness([obj("a", "1")]);
    h.informer.start();
    await flush();
    const w = h.watcher.last();
    w.emit("ADDED", obj("b", "11"));
    w.emit("MODIFIED", obj("a", "12", "new"));
    w.emit("MODIFIED", obj("a", "12", "new")); // same resourceVersion: no update
    w.emit("DELETED", obj("b", "13"));
    w.emit("DELETED", obj("never-seen", "14"));
    assert.deepEqual(h.events, ["add a@1", "add b@11", "update a@1->12", "delete b"]);
    assert.equal(h.informer.get("ns", "a")?.data, "new");
    assert.equal(h.informer.get("ns", "b"), undefined);
    assert.equal(h.informer.lastResourceVersion(), "14");
    await h.informer.stop();
  });

  test("cached objects are frozen, listed and watched alike", async () => {
    const h = harness([obj("c", "1")]);
    h.informer.start();
    await flush();
    const listed = h.informer.get("ns", "c");
    assert.ok(listed);
    assert.throws(() => {
      listed.metadata.name = "changed";
    }, TypeError);
    h.watcher.last().emit("ADDED", obj("d", "11"));
    const watched = h.informer.get("ns", "d");
    assert.ok(watched && Object.isFrozen(watched.metadata));
    const copy = structuredClone(watched);
    copy.metadata.name = "editable copy";
    // Everything in it, objects in arrays in objects included.
    const nested = obj("e", "12") as Obj & { spec?: unknown };
    nested.spec = { containers: [{ name: "app", ports: [{ containerPort: 8080 }] }], empty: [], none: null };
    h.watcher.last().emit("ADDED", nested);
    const deep = h.informer.get("ns", "e") as unknown as {
      spec: { containers: { ports: { containerPort: number }[] }[] };
    };
    const port = deep.spec.containers[0]?.ports[0];
    assert.ok(port && Object.isFrozen(deep.spec.containers) && Object.isFrozen(port));
    assert.throws(() => {
      port.containerPort = 1;
    }, TypeError);
    await h.informer.stop();
  });

  test("managedFields are not kept in the cache, listed or watched", async () => {
    const managed = (name: string, rv: string) => {
      const o = obj(name, rv) as ReturnType<typeof obj> & { metadata: { managedFields?: unknown[] } };
      o.metadata.managedFields = [{ manager: "kubectl", operation: "Apply", fieldsV1: { "f:spec": {} } }];
      return o;
    };
    const h = harness([managed("a", "1")]);
    h.informer.start();
    await flush();
    h.watcher.last().emit("ADDED", managed("b", "11"));
    for (const name of ["a", "b"]) {
      const cached = h.informer.get("ns", name) as { metadata: { managedFields?: unknown } } | undefined;
      assert.ok(cached, name);
      assert.equal(cached.metadata.managedFields, undefined, `${name} keeps managedFields`);
    }
    await h.informer.stop();
  });

  test("the transform cuts listed and watched objects before they are cached, frozen", async () => {
    const withExtra = (name: string, rv: string) => ({ ...obj(name, rv), status: { big: "x".repeat(100) } });
    const h = harness([withExtra("a", "1")], "10", (o) => {
      delete (o as { status?: unknown }).status;
      return o;
    });
    h.informer.start();
    await flush();
    h.watcher.last().emit("ADDED", withExtra("b", "11"));
    for (const name of ["a", "b"]) {
      const cached = h.informer.get("ns", name) as { status?: unknown; metadata: object } | undefined;
      assert.ok(cached, name);
      assert.equal(cached.status, undefined, `${name} keeps what the transform cut`);
      assert.ok(Object.isFrozen(cached.metadata), `${name} frozen`);
    }
    assert.deepEqual(h.events, ["add a@1", "add b@11"]);
    await h.informer.stop();
  });

  test("a bookmark moves the resourceVersion the next watch resumes from", async () => {
    const h = harness([]);
    h.informer.start();
    await flush();
    h.watcher.last().emit("BOOKMARK", { metadata: { resourceVersion: "99" } });
    h.watcher.last().done();
    await flush();
    assert.equal(h.watcher.calls.length, 2);
    assert.equal(h.watcher.last().params.resourceVersion, "99");
    assert.equal(h.lists.count, 1, "resumed without relisting");
    await h.informer.stop();
  });

  test("a 410 ERROR event relists at once; the relist reconciles the cache with handlers", async () => {
    const h = harness([obj("a", "1"), obj("b", "2")]);
    const told: string[] = [];
    h.informer.onSynced(() => told.push(`synced with ${h.events.length} adds told`));
    h.informer.start();
    await flush();
    assert.deepEqual(told, ["synced with 2 adds told"], "onSynced once the first list is cached and told");
    h.lists.result = () =>
      Promise.resolve({ metadata: { resourceVersion: "50" }, items: [obj("a", "1"), obj("b", "40"), obj("c", "41")] });
    // "a" and "b" keep existing; "b" changed; "gone" was never listed again.
    h.watcher.last().emit("ADDED", obj("gone", "20"));
    h.events.length = 0;
    h.watcher
      .last()
      .emit("ERROR", { kind: "Status", code: 410, reason: "Expired", message: "too old resource version" });
    await flush();
    assert.equal(h.lists.count, 2);
    assert.deepEqual(h.events, ["delete gone", "update b@2->40", "add c@41"]);
    assert.equal(h.watcher.calls[0]?.aborted, true, "the expired watch was closed");
    assert.equal(h.watcher.last().params.resourceVersion, "50");
    assert.equal(h.clock.pending(), 0, "no backoff for an expiry");
    assert.equal(told.length, 1, "a relist is not a first sync");
    await h.informer.stop();
  });

  test("a 410 answer to the watch request relists as well", async () => {
    const h = harness([obj("a", "1")]);
    h.informer.start();
    await flush();
    h.watcher.last().done(Object.assign(new Error("Gone"), { statusCode: 410 }));
    await flush();
    assert.equal(h.lists.count, 2);
    assert.equal(h.watcher.calls.length, 2);
    await h.informer.stop();
  });

  test("a failing watch is restarted with capped exponential backoff from the last resourceVersion", async () => {
    const h = harness([obj("a", "1")]);
    h.informer.start();
    await flush();
    const fail = (): void => h.watcher.last().done(Object.assign(new Error("socket hang up"), { code: "ECONNRESET" }));
    const delays: number[] = [];
    for (let i = 0; i < 7; i++) {
      const before = h.watcher.calls.length;
      fail();
      let waited = 0;
      while (h.watcher.calls.length === before) {
        await h.clock.advance(100);
        waited += 100;
      }
      delays.push(waited);
    }
    assert.deepEqual(delays, [1000, 2000, 4000, 8000, 16000, 30000, 30000]);
    assert.equal(h.lists.count, 1, "no relist: the resourceVersion is still good");
    assert.equal(h.watcher.last().params.resourceVersion, "10");
    const warnings = h.lines.filter((l) => l.msg === "watch failed; restarting");
    assert.equal(warnings.length, 7);
    assert.equal(warnings[0]?.delayMs, 1000);
    assert.equal(warnings[0]?.resource, "things");
    // Events flowing again reset the backoff.
    h.watcher.last().emit("ADDED", obj("b", "11"));
    fail();
    await h.clock.advance(1000);
    assert.equal(h.watcher.last().params.resourceVersion, "11");
    await h.informer.stop();
  });

  test("a watch that keeps failing past twice its backoff ceiling is stalled, until one works again", async () => {
    const h = harness([obj("a", "1")]);
    h.informer.start();
    await flush();
    assert.equal(h.informer.stalled(), undefined);
    const fail = (): void =>
      h.watcher.last().done(Object.assign(new Error("connect ECONNREFUSED"), { code: "ECONNREFUSED" }));
    const started = h.clock.now();
    let reason: string | undefined;
    while (h.clock.now() - started < 120_000) {
      const before = h.watcher.calls.length;
      fail();
      while (h.watcher.calls.length === before) await h.clock.advance(100);
      reason ??= h.informer.stalled();
      if (reason !== undefined) break;
    }
    const stalledAfter = h.clock.now() - started;
    assert.ok(stalledAfter > 60_000 && stalledAfter <= 91_000, `stalled after ${stalledAfter} ms`);
    assert.match(reason ?? "", /things: list\/watch failing for \d+s \(backoff ceiling 30s\)/);
    // The server is back: the watch stays open (no event needed).
    await h.clock.advance(1000);
    assert.equal(h.informer.stalled(), undefined);
    await h.informer.stop();
  });

  test("a non-410 ERROR event is a failure with backoff", async () => {
    const h = harness([]);
    h.informer.start();
    await flush();
    h.watcher.last().emit("ERROR", { kind: "Status", code: 500, reason: "InternalError", message: "etcd down" });
    await flush();
    assert.equal(h.watcher.calls.length, 1);
    const warning = h.lines.find((l) => l.msg === "watch failed; restarting");
    assert.match(String((warning?.err as { message: string }).message), /things: watch: etcd down/);
    await h.clock.advance(1000);
    assert.equal(h.watcher.calls.length, 2);
    await h.informer.stop();
  });

  test("a failing list is retried with backoff; not synced until it succeeds", async () => {
    const h = harness([obj("a", "1")]);
    let fails = 2;
    const good = h.lists.result;
    h.lists.result = () => (fails-- > 0 ? Promise.reject(new Error("connection refused")) : good());
    h.informer.start();
    await flush();
    assert.equal(h.informer.hasSynced(), false);
    assert.equal(h.watcher.calls.length, 0);
    await h.clock.advance(1000);
    assert.equal(h.informer.hasSynced(), false);
    await h.clock.advance(2000);
    assert.equal(h.informer.hasSynced(), true);
    assert.equal(h.lists.count, 3);
    assert.equal(h.lines.filter((l) => l.msg === "list failed; retrying").length, 2);
    await h.informer.stop();
  });

  test("a watch that ends after events resumes at once; one that ends at once backs off", async () => {
    const h = harness([]);
    h.informer.start();
    await flush();
    h.watcher.last().emit("ADDED", obj("a", "11"));
    h.watcher.last().done();
    await flush();
    assert.equal(h.watcher.calls.length, 2, "resumed at once");
    h.watcher.last().done();
    await flush();
    assert.equal(h.watcher.calls.length, 2, "an empty watch that closed at once waits");
    await h.clock.advance(1000);
    assert.equal(h.watcher.calls.length, 3);
    await h.informer.stop();
  });

  test("the client's inactivity timeout resumes at once", async () => {
    const h = harness([]);
    h.informer.start();
    await flush();
    h.watcher.last().done(new DOMException("The operation was aborted due to timeout", "TimeoutError"));
    await flush();
    assert.equal(h.watcher.calls.length, 2);
    await h.informer.stop();
  });

  test("stop does not wait for a hanging list, and no watch starts after it", async () => {
    const h = harness([obj("a", "1")]);
    let release: () => void = () => undefined;
    const good = h.lists.result;
    h.lists.result = () => new Promise((resolve) => (release = () => resolve(good())));
    h.informer.start();
    await flush();
    await h.informer.stop(); // resolves although the list has not answered
    release();
    await flush();
    assert.equal(h.watcher.calls.length, 0);
    assert.equal(h.informer.hasSynced(), false, "a list that answers after stop is ignored");
  });

  test("stop closes the open watch and nothing restarts", async () => {
    const h = harness([]);
    h.informer.start();
    await flush();
    await h.informer.stop();
    assert.equal(h.watcher.last().aborted, true);
    await flush();
    assert.equal(h.watcher.calls.length, 1);
    assert.equal(h.clock.pending(), 0);
  });

  test("a stopped informer starts again from where it was", async () => {
    const h = harness([obj("a", "1")]);
    h.informer.start();
    await flush();
    h.watcher.last().emit("ADDED", obj("b", "11"));
    await h.informer.stop();
    h.informer.start();
    await flush();
    assert.equal(h.lists.count, 1);
    assert.equal(h.watcher.last().params.resourceVersion, "11");
    assert.equal(h.informer.list().length, 2);
    await h.informer.stop();
  });

  test("a handler that throws is logged and does not stop the informer", async () => {
    const h = harness([]);
    h.informer.onAdd(() => {
      throw new Error("handler bug");
    });
    h.informer.start();
    await flush();
    h.watcher.last().emit("ADDED", obj("a", "11"));
    h.watcher.last().emit("ADDED", obj("b", "12"));
    assert.deepEqual(h.events, ["add a@11", "add b@12"]);
    assert.equal(h.lines.filter((l) => l.msg === "informer handler threw").length, 2);
    await h.informer.stop();
  });
});

describe("createInformer", () => {
  const type = { group: "apps", version: "v1", plural: "deployments" };

  test("resourcePath for core and grouped kinds, namespaced and cluster-wide", () => {
    assert.equal(resourcePath(type, "shop"), "/apis/apps/v1/namespaces/shop/deployments");
    assert.equal(resourcePath(type), "/apis/apps/v1/deployments");
    assert.equal(resourcePath({ group: "", version: "v1", plural: "services" }, "a"), "/api/v1/namespaces/a/services");
  });

  test("all namespaces: one cluster-wide list and watch", async () => {
    const watcher = new FakeWatcher();
    const listed: (string | undefined)[] = [];
    const informer = createInformer<Obj>({
      type,
      list: ({ namespace, labelSelector, each }) => {
        listed.push(namespace, labelSelector);
        return handedEach(
          Promise.resolve({ metadata: { resourceVersion: "1" }, items: [obj("a", "1", undefined, "x")] }),
          each,
        );
      },
      labelSelector: "l=v",
      watcher,
      log: pino({ level: "silent" }),
      clock: new FakeClock(),
    });
    informer.start();
    await flush();
    assert.deepEqual(listed, [undefined, "l=v"]);
    assert.equal(watcher.last().path, "/apis/apps/v1/deployments");
    assert.equal(informer.get("x", "a")?.metadata.name, "a");
    await informer.stop();
  });

  test("some namespaces: one informer each behind one facade", async () => {
    const watcher = new FakeWatcher();
    const gate: Record<string, () => void> = {};
    const informer = createInformer<Obj>({
      type,
      namespaces: ["a", "b", "a"],
      list: ({ namespace, each }) =>
        handedEach(
          new Promise<ObjectList<Obj>>((resolve) => {
            gate[namespace ?? ""] = () =>
              resolve({
                metadata: { resourceVersion: "1" },
                items: [obj(`in-${namespace}`, "1", undefined, namespace)],
              });
          }),
          each,
        ),
      watcher,
      log: pino({ level: "silent" }),
      clock: new FakeClock(),
    });
    const added: string[] = [];
    informer.onAdd((o) => added.push(o.metadata.name));
    let told = 0;
    informer.onSynced?.(() => told++);
    informer.start();
    await flush();
    assert.deepEqual(Object.keys(gate).sort(), ["a", "b"]);
    gate.a?.();
    await flush();
    assert.equal(informer.hasSynced(), false, "synced only when every namespace is");
    assert.equal(told, 0);
    gate.b?.();
    await flush();
    assert.equal(informer.hasSynced(), true);
    assert.equal(told, 1, "told once, when the last namespace synced");
    assert.deepEqual(watcher.calls.map((c) => c.path).sort(), [
      "/apis/apps/v1/namespaces/a/deployments",
      "/apis/apps/v1/namespaces/b/deployments",
    ]);
    assert.equal(informer.get("a", "in-a")?.metadata.name, "in-a");
    assert.equal(informer.get("c", "in-a"), undefined);
    assert.deepEqual(
      informer
        .list()
        .map((o) => o.metadata.name)
        .sort(),
      ["in-a", "in-b"],
    );
    assert.deepEqual(
      informer.list("b").map((o) => o.metadata.name),
      ["in-b"],
    );
    assert.deepEqual(added.sort(), ["in-a", "in-b"]);
    await informer.stop();
  });
});

describe("ListWatchInformer reading lists as they arrive", () => {
  test("a list that fails part way caches none of what it handed over; the next list is taken whole", async () => {
    const h = harness([obj("b", "2")]);
    h.lists.handedFirst = [obj("a", "1")];
    const good = h.lists.result;
    h.lists.result = () => Promise.reject(new Error("connection reset"));
    h.informer.start();
    await flush();
    assert.equal(h.informer.hasSynced(), false);
    assert.deepEqual(h.events, []);
    assert.equal(h.informer.get("ns", "a"), undefined);
    h.lists.handedFirst = [];
    h.lists.result = good;
    await h.clock.advance(1000);
    assert.equal(h.informer.hasSynced(), true);
    assert.deepEqual(h.events, ["add b@2"]);
    assert.equal(h.informer.get("ns", "a"), undefined);
    await h.informer.stop();
  });

  test("keep is asked again once a load's list is in: what it stopped admitting meanwhile is not cached", async () => {
    const wanted = new Set(["a"]);
    const h = harness([obj("a", "1")], "10", undefined, (o) => wanted.has(o.metadata.name));
    h.informer.start();
    await flush();
    wanted.add("b");
    let answer: (list: ObjectList<Obj>) => void = () => undefined;
    h.lists.handedFirst = [obj("b", "5")];
    h.lists.result = () => new Promise((resolve) => (answer = resolve));
    const load = h.informer.load();
    await flush();
    // The share is given up while the list is still arriving.
    wanted.delete("b");
    h.informer.prune();
    answer({ metadata: { resourceVersion: "20" }, items: [] });
    await load;
    assert.equal(h.informer.get("ns", "b"), undefined);
    assert.deepEqual(h.events, ["add a@1"]);
    await h.informer.stop();
  });
});

describe("ListWatchInformer with keep (a cache of some objects only)", () => {
  test("caches and tells only what keep admits; load loads what it admits now; prune forgets the rest", async () => {
    const wanted = new Set(["a"]);
    const server = [obj("a", "1"), obj("b", "2"), obj("c", "3")];
    const h = harness(server, "10", undefined, (o) => wanted.has(o.metadata.name ?? ""));
    h.informer.start();
    await flush();
    assert.deepEqual(h.events, ["add a@1"]);
    assert.deepEqual(
      h.informer.list().map((o) => o.metadata.name),
      ["a"],
    );

    // Watched changes of objects not kept are neither cached nor told.
    h.watcher.last().emit("MODIFIED", obj("b", "11"));
    h.watcher.last().emit("ADDED", obj("d", "12"));
    assert.equal(h.informer.get("ns", "b"), undefined);
    assert.deepEqual(h.events, ["add a@1"]);

    // The filter widens: load lists again and resolves once b and c are cached; the watch goes on.
    wanted.add("b").add("c");
    server[1] = obj("b", "11");
    h.lists.result = () => Promise.resolve({ metadata: { resourceVersion: "20" }, items: server });
    const watches = h.watcher.calls.length;
    await h.informer.load();
    assert.equal(h.lists.count, 2);
    assert.deepEqual(h.events, ["add a@1", "add b@11", "add c@3"]);
    await flush();
    assert.equal(h.watcher.calls.length, watches, "the same watch");

    // The filter narrows: prune forgets without telling anyone.
    wanted.delete("a");
    h.informer.prune();
    assert.deepEqual(
      h.informer
        .list()
        .map((o) => o.metadata.name)
        .sort(),
      ["b", "c"],
    );
    assert.equal(h.events.length, 3);
    // A watched change of an object no longer kept does not bring it back.
    h.watcher.last().emit("MODIFIED", obj("a", "21"));
    assert.equal(h.informer.get("ns", "a"), undefined);
    await h.informer.stop();
  });
});

/** A list the test answers when it wants: `answer` resolves it with `items` (at resourceVersion 30). */
function pendingList(): { result: () => Promise<ObjectList<Obj>>; answer: (items: Obj[]) => void } {
  let answer: (items: Obj[]) => void = () => assert.fail("no list asked for");
  return {
    result: () =>
      new Promise((resolve) => {
        answer = (items) => resolve({ metadata: { resourceVersion: "30" }, items });
      }),
    answer: (items) => answer(items),
  };
}

describe("ListWatchInformer.load (a widened filter loaded while the watch goes on)", () => {
  /** A cache of the objects named in `wanted`; the server has a@1, b@5 and c@6, and only a is wanted. */
  async function started(): Promise<{ h: Harness; wanted: Set<string> }> {
    const wanted = new Set(["a"]);
    const h = harness([obj("a", "1"), obj("b", "5"), obj("c", "6")], "10", undefined, (o) =>
      wanted.has(o.metadata.name ?? ""),
    );
    h.informer.start();
    await flush();
    assert.deepEqual(h.events, ["add a@1"]);
    return { h, wanted };
  }

  test("lists with the narrower selector, caches and tells what keep admits, and leaves the watch open", async () => {
    const { h, wanted } = await started();
    const watches = h.watcher.calls.length;
    wanted.add("b");
    h.lists.result = () =>
      Promise.resolve({ metadata: { resourceVersion: "20" }, items: [obj("b", "5"), obj("c", "6")] });
    await h.informer.load("canaryapp.io/share in (1-of-4)");
    assert.deepEqual(h.lists.selectors, [undefined, "canaryapp.io/share in (1-of-4)"]);
    assert.deepEqual(h.events, ["add a@1", "add b@5"], "c is listed but not kept");
    assert.equal(h.informer.get("ns", "b")?.metadata.resourceVersion, "5");
    assert.equal(h.watcher.calls.length, watches, "no new watch");
    assert.equal(h.watcher.last().aborted, false, "the watch was not ended");
    // The watch still resumes from its own resourceVersion, not the load's.
    assert.equal(h.informer.lastResourceVersion(), "10");
    await h.informer.stop();
  });

  test("a watch delete during a load does not let the older list bring the object back", async () => {
    const { h, wanted } = await started();
    wanted.add("b");
    const list = pendingList();
    h.lists.result = list.result;
    const loading = h.informer.load("share=b");
    await flush();
    // b is deleted after the list's snapshot was taken but before its answer arrives.
    h.watcher.last().emit("DELETED", obj("b", "12"));
    list.answer([obj("b", "5")]);
    await loading;
    assert.equal(h.informer.get("ns", "b"), undefined, "b is deleted, whatever the list says");
    assert.deepEqual(h.events, ["add a@1"]);
    await h.informer.stop();
  });

  test("a watch add then delete during a load ends deleted, and told so", async () => {
    const { h, wanted } = await started();
    wanted.add("b");
    const list = pendingList();
    h.lists.result = list.result;
    const loading = h.informer.load("share=b");
    await flush();
    h.watcher.last().emit("MODIFIED", obj("b", "11"));
    h.watcher.last().emit("DELETED", obj("b", "12"));
    list.answer([obj("b", "5")]);
    await loading;
    assert.equal(h.informer.get("ns", "b"), undefined);
    assert.deepEqual(h.events, ["add a@1", "add b@11", "delete b"]);
    await h.informer.stop();
  });

  test("a watch update during a load is not overwritten by an older list item", async () => {
    const { h, wanted } = await started();
    wanted.add("b").add("c");
    const list = pendingList();
    h.lists.result = list.result;
    const loading = h.informer.load("share=b");
    await flush();
    h.watcher.last().emit("MODIFIED", obj("b", "12"));
    list.answer([obj("b", "5"), obj("c", "6")]);
    await loading;
    assert.equal(h.informer.get("ns", "b")?.metadata.resourceVersion, "12", "the watch's b, not the list's");
    assert.equal(h.informer.get("ns", "c")?.metadata.resourceVersion, "6", "c, untouched by the watch, is loaded");
    assert.deepEqual(h.events, ["add a@1", "add b@12", "add c@6"]);
    await h.informer.stop();
  });

  test("an object already cached is updated by a newer listed version, and not told again when unchanged", async () => {
    const { h, wanted } = await started();
    wanted.add("b");
    h.lists.result = () =>
      Promise.resolve({ metadata: { resourceVersion: "20" }, items: [obj("a", "1"), obj("b", "5")] });
    await h.informer.load();
    h.lists.result = () =>
      Promise.resolve({ metadata: { resourceVersion: "21" }, items: [obj("a", "1"), obj("b", "13")] });
    await h.informer.load();
    assert.deepEqual(h.events, ["add a@1", "add b@5", "update b@5->13"]);
    await h.informer.stop();
  });

  test("a relist that completes during a load drops the load's older list", async () => {
    const { h, wanted } = await started();
    wanted.add("b");
    const list = pendingList();
    h.lists.result = list.result;
    const loading = h.informer.load("share=b");
    await flush();
    // The watch expires: the loop relists (b@14 now) before the load's list (b@5, older) comes back.
    h.lists.result = () =>
      Promise.resolve({ metadata: { resourceVersion: "40" }, items: [obj("a", "1"), obj("b", "14")] });
    h.watcher.last().emit("ERROR", { code: 410 });
    await flush();
    assert.equal(h.informer.get("ns", "b")?.metadata.resourceVersion, "14");
    list.answer([obj("b", "5")]);
    await loading;
    assert.equal(h.informer.get("ns", "b")?.metadata.resourceVersion, "14");
    assert.deepEqual(h.events, ["add a@1", "add b@14"]);
    await h.informer.stop();
  });

  test("while an object without its label is known (kept or not), a load lists everything; then it narrows again", async () => {
    const wanted = new Set(["a"]);
    // b and c were written before the label: a list narrowed by it would not find them.
    const h = harness(
      [obj("a", "1"), obj("b", "5", "unlabelled"), obj("c", "6", "unlabelled")],
      "10",
      undefined,
      (o) => wanted.has(o.metadata.name ?? ""),
      (o) => o.data !== "unlabelled",
    );
    h.informer.start();
    await flush();
    wanted.add("b");
    h.lists.result = () =>
      Promise.resolve({
        metadata: { resourceVersion: "20" },
        items: [obj("a", "1"), obj("b", "5", "unlabelled"), obj("c", "6", "unlabelled")],
      });
    await h.informer.load("share=b");
    assert.equal(h.lists.selectors.at(-1), undefined, "a full list");
    assert.equal(h.informer.get("ns", "b")?.metadata.resourceVersion, "5", "b is found");
    assert.equal(h.informer.get("ns", "c"), undefined, "c is listed, not kept");
    // b is labelled now (applied again), c deleted: every object the server has carries its label.
    h.watcher.last().emit("MODIFIED", obj("b", "12"));
    await h.informer.load("share=b");
    assert.equal(h.lists.selectors.at(-1), undefined, "c (not kept) is still unlabelled");
    h.watcher.last().emit("DELETED", obj("c", "13", "unlabelled"));
    h.lists.result = () => Promise.resolve({ metadata: { resourceVersion: "20" }, items: [] });
    await h.informer.load("share=d");
    assert.equal(h.lists.selectors.at(-1), "share=d", "narrowed again");
    // An object watched without its label is remembered too.
    h.watcher.last().emit("ADDED", obj("e", "14", "unlabelled"));
    await h.informer.load("share=d");
    assert.equal(h.lists.selectors.at(-1), undefined);
    await h.informer.stop();
  });

  test("a failed load list is retried with backoff; a stop ends a load in flight", async () => {
    const { h, wanted } = await started();
    wanted.add("b");
    h.lists.result = () => Promise.reject(new Error("connection refused"));
    const loading = h.informer.load("share=b");
    await flush();
    assert.equal(h.lists.count, 2);
    h.lists.result = () => Promise.resolve({ metadata: { resourceVersion: "20" }, items: [obj("b", "5")] });
    await h.clock.advance(1000);
    await loading;
    assert.equal(h.lists.count, 3);
    assert.equal(h.informer.get("ns", "b")?.metadata.resourceVersion, "5");

    h.lists.result = () => new Promise(() => undefined);
    const hanging = h.informer.load("share=c");
    await h.informer.stop();
    await hanging;
    // Stopped: a load resolves at once.
    await h.informer.load("share=c");
  });
});

describe("createInformer with keep over some namespaces", () => {
  test("load lists every namespace with the informer's selector and the narrower one joined", async () => {
    const selectors: string[] = [];
    const informer = createInformer<Obj>({
      type: { group: "apps", version: "v1", plural: "deployments" },
      namespaces: ["a", "b"],
      labelSelector: "app.kubernetes.io/managed-by=canaryapp",
      list: ({ namespace, labelSelector, each }) => {
        selectors.push(`${namespace ?? ""}: ${labelSelector ?? ""}`);
        return handedEach(
          Promise.resolve({ metadata: { resourceVersion: "1" }, items: [obj("x", "1", undefined, namespace)] }),
          each,
        );
      },
      watcher: new FakeWatcher(),
      log: pino({ level: "silent" }),
      clock: new FakeClock(),
      keep: () => true,
    });
    informer.start();
    await flush();
    await informer.load?.("canaryapp.io/share in (3-of-8)");
    assert.deepEqual(selectors.sort(), [
      "a: app.kubernetes.io/managed-by=canaryapp",
      "a: app.kubernetes.io/managed-by=canaryapp,canaryapp.io/share in (3-of-8)",
      "b: app.kubernetes.io/managed-by=canaryapp",
      "b: app.kubernetes.io/managed-by=canaryapp,canaryapp.io/share in (3-of-8)",
    ]);
    await informer.stop();
  });

  test("load lists every namespace again and prune narrows every one", async () => {
    let wanted = "x";
    let lists = 0;
    const informer = createInformer<Obj>({
      type: { group: "apps", version: "v1", plural: "deployments" },
      namespaces: ["a", "b"],
      list: ({ namespace, each }) => {
        lists++;
        return handedEach(
          Promise.resolve({
            metadata: { resourceVersion: "1" },
            items: [obj("x", "1", undefined, namespace), obj("y", "1", undefined, namespace)],
          }),
          each,
        );
      },
      watcher: new FakeWatcher(),
      log: pino({ level: "silent" }),
      clock: new FakeClock(),
      keep: (o) => o.metadata.name === wanted || o.metadata.name === "x",
    });
    informer.start();
    await flush();
    assert.equal(lists, 2);
    assert.deepEqual(
      informer
        .list()
        .map((o) => `${o.metadata.namespace}/${o.metadata.name}`)
        .sort(),
      ["a/x", "b/x"],
    );
    wanted = "y";
    await informer.load?.();
    assert.equal(lists, 4);
    assert.equal(informer.list().length, 4);
    assert.equal(informer.size(), 4);
    wanted = "x";
    informer.prune?.();
    assert.equal(informer.list().length, 2);
    assert.equal(informer.size(), 2);
    await informer.stop();
  });
});

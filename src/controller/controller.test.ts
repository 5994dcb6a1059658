import { describe, test } from "node:test";
import assert from "node:assert/strict";
import { pino } from "pino";
import {
  Controller,
  TerminalError,
  type ControllerHooks,
  type Reconcile,
  type ReconcileOutcome,
} from "./controller.js";
import { sleep } from "../time/clock.js";
import { FakeClock, flush } from "./fake-clock.test-helpers.js";
import { FakeInformer } from "./fake-informer.test-helpers.js";
import { keyFromLabel, objectKey } from "../object-keys.js";

interface Thing {
  metadata: { name: string; namespace: string; resourceVersion?: string; labels?: Record<string, string> };
}

function thing(name: string, labels?: Record<string, string>, namespace = "ns"): Thing {
  return { metadata: { name, namespace, labels } };
}

function capture(): { log: pino.Logger; lines: Record<string, unknown>[] } {
  const lines: Record<string, unknown>[] = [];
  const log = pino({ level: "info" }, { write: (s: string) => lines.push(JSON.parse(s) as Record<string, unknown>) });
  return { log, lines };
}

interface Setup {
  controller: Controller;
  clock: FakeClock;
  parents: FakeInformer<Thing>;
  children: FakeInformer<Thing>;
  calls: string[];
  outcomes: { key: string; outcome: ReconcileOutcome }[];
  lines: Record<string, unknown>[];
  running: Promise<void>;
}

function setup(reconcile: Reconcile, opts: { workers?: number; parents?: Thing[]; children?: Thing[] } = {}): Setup {
  const clock = new FakeClock();
  const parents = new FakeInformer<Thing>(opts.parents ?? []);
  const children = new FakeInformer<Thing>(opts.children ?? []);
  const calls: string[] = [];
  const outcomes: { key: string; outcome: ReconcileOutcome }[] = [];
  const hooks: ControllerHooks = { reconciled: ({ key, outcome }) => outcomes.push({ key, outcome }) };
  const { log, lines } = capture();
  const controller = new Controller({
    name: "test",
    reconcile: (key) => {
      calls.push(key);
      return reconcile(key);
    },
    workers: opts.workers ?? 2,
    log,
    hooks,
    clock,
  });
  controller.watch(parents, objectKey).watch(children, keyFromLabel("canaryapp.io/app"));
  return { controller, clock, parents, children, calls, outcomes, lines, running: Promise.resolve() };
}

async function start(s: Setup, signal?: AbortSignal): Promise<void> {
  s.running = s.controller.run(signal);
  await flush();
}

const ok: Reconcile = () => Promise.resolve({});

describe("Controller", () => {
  // A cache that cannot tell it synced is found at the next check; one that tells starts the work at once.
  const syncs: { name: string; sync: (s: Setup) => Promise<void> }[] = [
    {
      name: "does no work until every cache has synced",
      sync: async (s) => {
        s.children.synced = true;
        await s.clock.advance(100);
      },
    },
    {
      name: "a cache that tells when it synced starts the work at once, not at the next check",
      sync: async (s) => {
        s.children.sync(); // the clock does not move: no poll falls due
        await flush();
      },
    },
  ];
  for (const { name, sync } of syncs) {
    test(name, async () => {
      const s = setup(ok, { parents: [thing("a")] });
      s.children.synced = false;
      await start(s);
      await s.clock.advance(1000);
      assert.deepEqual(s.calls, []);
      assert.equal(s.controller.ready(), false);
      await sync(s);
      assert.deepEqual(s.calls, ["ns/a"]);
      assert.equal(s.controller.ready(), true);
      await s.controller.stop();
      await s.running;
    });
  }

  test("logs once how long after the caches synced the first reconcile ended and the queue first ran empty", async () => {
    const s = setup(
      async () => {
        await sleep(s.clock, 10);
        return {};
      },
      { workers: 1, parents: [thing("a"), thing("b"), thing("c")] },
    );
    s.children.synced = false;
    await start(s);
    await s.clock.advance(250);
    s.children.sync();
    await flush();
    for (let i = 0; i < 3; i++) await s.clock.advance(10);
    s.parents.set(thing("d"));
    await s.clock.advance(10);
    assert.deepEqual(s.calls, ["ns/a", "ns/b", "ns/c", "ns/d"]);
    const startUp = s.lines
      .filter((l) =>
        ["caches synced; starting workers", "first reconcile done", "caught up: the queue ran empty"].includes(
          String(l["msg"]),
        ),
      )
      .map(({ msg, ms, key, reconciles }) => ({ msg, ms, key, reconciles }));
    assert.deepEqual(startUp, [
      { msg: "caches synced; starting workers", ms: 250, key: undefined, reconciles: undefined },
      { msg: "first reconcile done", ms: 10, key: "ns/a", reconciles: undefined },
      { msg: "caught up: the queue ran empty", ms: 30, key: undefined, reconciles: 3 },
    ]);
    await s.controller.stop();
    await s.running;
  });

  test("the queue runs empty once every worker's reconcile is counted, however the reconciles interleave", async () => {
    const s = setup(ok, { workers: 4, parents: [thing("a"), thing("b"), thing("c")] });
    await start(s);
    await flush();
    assert.equal(s.calls.length, 3);
    const caughtUp = s.lines.filter((l) => l["msg"] === "caught up: the queue ran empty");
    assert.deepEqual(
      caughtUp.map((l) => l["reconciles"]),
      [3],
    );
    await s.controller.stop();
    await s.running;
  });

  test("children are keyed to their parent; a burst of events costs one reconcile", async () => {
    const s = setup(ok);
    s.children.synced = false;
    await start(s);
    for (let i = 0; i < 100; i++) s.children.set({ ...thing("web-primary", { "canaryapp.io/app": "web" }) });
    s.children.set(thing("unrelated"));
    s.children.synced = true;
    await s.clock.advance(100);
    assert.deepEqual(s.calls, ["ns/web"]);
    await s.controller.stop();
    await s.running;
  });

  test("an update that moves a child to another parent reconciles both", async () => {
    const s = setup(ok, { children: [thing("c", { "canaryapp.io/app": "old" })] });
    await start(s);
    await s.clock.advance(100);
    s.calls.length = 0;
    s.children.set(thing("c", { "canaryapp.io/app": "new" }));
    await flush();
    assert.deepEqual(s.calls.sort(), ["ns/new", "ns/old"]);
    await s.controller.stop();
    await s.running;
  });

  test("a deleted object is reconciled once more", async () => {
    const s = setup(ok, { parents: [thing("a")] });
    await start(s);
    await s.clock.advance(100);
    s.parents.remove("ns", "a");
    await flush();
    assert.deepEqual(s.calls, ["ns/a", "ns/a"]);
    await s.controller.stop();
    await s.running;
  });

  test("one key is never reconciled by two workers at once, however often it changes", async () => {
    const active = new Set<string>();
    let overlaps = 0;
    let releases: (() => void)[] = [];
    const s = setup(
      (key) => {
        if (active.has(key)) overlaps++;
        active.add(key);
        return new Promise((resolve) =>
          releases.push(() => {
            active.delete(key);
            resolve({});
          }),
        );
      },
      { workers: 4, parents: [thing("a"), thing("b")] },
    );
    await start(s);
    await s.clock.advance(100);
    for (let round = 0; round < 5; round++) {
      s.parents.set({ ...thing("a"), metadata: { ...thing("a").metadata, resourceVersion: `${round}` } });
      await flush();
      const pending = releases;
      releases = [];
      for (const release of pending) release();
      await flush();
    }
    while (releases.length > 0) {
      releases.splice(0).forEach((r) => r());
      await flush();
    }
    assert.equal(overlaps, 0);
    assert.ok(s.calls.filter((k) => k === "ns/a").length >= 2, "changes during processing were reconciled after");
    await s.controller.stop();
    await s.running;
  });

  test("errors are retried with growing backoff; success resets it", async () => {
    let failures = 3;
    const s = setup(() => (failures-- > 0 ? Promise.reject(new Error("api down")) : Promise.resolve({})), {
      parents: [thing("a")],
    });
    await start(s); // caches are synced at once: the first reconcile runs at t=0
    assert.equal(s.calls.length, 1);
    await s.clock.advance(199);
    assert.equal(s.calls.length, 1, "first retry after 200 ms");
    await s.clock.advance(1);
    assert.equal(s.calls.length, 2);
    await s.clock.advance(400);
    assert.equal(s.calls.length, 3, "then 400 ms");
    await s.clock.advance(800);
    assert.equal(s.calls.length, 4, "then 800 ms, and this one succeeds");
    assert.equal(s.controller.queue.numRequeues("ns/a"), 0, "success forgets the backoff");
    assert.deepEqual(
      s.outcomes.map((o) => o.outcome),
      ["error", "error", "error", "success"],
    );
    const warning = s.lines.find((l) => l.msg === "reconcile failed; retrying");
    assert.equal(warning?.key, "ns/a");
    assert.equal(warning?.backoffMs, 200);
    assert.equal(warning?.controller, "test");
    assert.equal((warning?.err as { message: string }).message, "api down");
    await s.clock.advance(60_000);
    assert.equal(s.calls.length, 4, "no more work");
    await s.controller.stop();
    await s.running;
  });

  test("a reconcile throttled with Retry-After is retried when the server said, not at the first backoff", async () => {
    let throttled = true;
    const s = setup(
      () => {
        if (!throttled) return Promise.resolve({});
        throttled = false;
        const status = { kind: "Status", code: 429, reason: "TooManyRequests" };
        // As the client rejects a 429 from priority and fairness, wrapped with the object it was about.
        const cause = Object.assign(new Error("HTTP-Code: 429"), {
          code: 429,
          body: status,
          headers: { "retry-after": "3" },
        });
        return Promise.reject(new Error("Deployment ns/a-primary: apply", { cause }));
      },
      { parents: [thing("a")] },
    );
    await start(s);
    assert.equal(s.calls.length, 1);
    await s.clock.advance(2999);
    assert.equal(s.calls.length, 1, "not at 200 ms: the server asked for 3 s");
    await s.clock.advance(1);
    assert.equal(s.calls.length, 2);
    assert.equal(s.lines.find((l) => l.msg === "reconcile failed; retrying")?.backoffMs, 3000);
    await s.controller.stop();
    await s.running;
  });

  test("a conflict is logged as info, not as a warning", async () => {
    let first = true;
    const s = setup(
      () => {
        if (!first) return Promise.resolve({});
        first = false;
        return Promise.reject(Object.assign(new Error("stale"), { cause: { code: 409 } }));
      },
      { parents: [thing("a")] },
    );
    await start(s);
    await s.clock.advance(300);
    assert.ok(s.lines.some((l) => l.msg === "reconcile hit a conflict; retrying" && l.level === 30));
    assert.equal(s.calls.length, 2);
    await s.controller.stop();
    await s.running;
  });

  test("a terminal error is not retried", async () => {
    const s = setup(() => Promise.reject(new TerminalError("spec cannot work")), { parents: [thing("a")] });
    await start(s);
    await s.clock.advance(100);
    await s.clock.advance(10 * 60_000);
    assert.equal(s.calls.length, 1);
    assert.deepEqual(s.outcomes, [{ key: "ns/a", outcome: "terminal" }]);
    await s.controller.stop();
    await s.running;
  });

  test("requeueAfterMs reconciles the key again after that delay", async () => {
    let n = 0;
    const s = setup(() => Promise.resolve(n++ === 0 ? { requeueAfterMs: 30_000 } : {}), { parents: [thing("a")] });
    await start(s);
    await s.clock.advance(29_999);
    assert.equal(s.calls.length, 1);
    await s.clock.advance(1);
    assert.equal(s.calls.length, 2);
    assert.deepEqual(
      s.outcomes.map((o) => o.outcome),
      ["requeue", "success"],
    );
    await s.controller.stop();
    await s.running;
  });

  test("stop drains in-flight reconciles, then stops the informers, and run resolves", async () => {
    let release: () => void = () => undefined;
    const s = setup(() => new Promise((resolve) => (release = () => resolve({}))), {
      parents: [thing("a"), thing("b")],
      workers: 1,
    });
    await start(s);
    await s.clock.advance(100);
    assert.deepEqual(s.calls, ["ns/a"]);
    let stopped = false;
    const stopping = s.controller.stop().then(() => (stopped = true));
    await flush();
    assert.equal(s.controller.ready(), false);
    assert.equal(stopped, false, "waits for the in-flight reconcile");
    assert.equal(s.parents.stopped, false, "informers stop only after the drain");
    release();
    await stopping;
    await s.running;
    assert.deepEqual(s.calls, ["ns/a"], "queued work is not started after stop");
    assert.equal(s.parents.stopped && s.children.stopped, true);
  });

  test("aborting the signal stops the controller", async () => {
    const s = setup(ok, { parents: [thing("a")] });
    const abort = new AbortController();
    await start(s, abort.signal);
    await s.clock.advance(100);
    abort.abort();
    await s.running;
    assert.equal(s.parents.stopped, true);
    assert.equal(s.controller.ready(), false);
  });

  test("stopped while waiting for caches: no work, informers stopped", async () => {
    const s = setup(ok, { parents: [thing("a")] });
    s.parents.synced = false;
    await start(s);
    await s.controller.stop();
    await s.clock.advance(100);
    await s.running;
    assert.deepEqual(s.calls, []);
    assert.equal(s.parents.stopped, true);
  });

  test("a long queue of reconciles with nothing to await still lets the event loop turn", async () => {
    // Each reconcile burns 5 ms and resolves at once, as one over a settled app does: 40 of them back to back
    // would hold the loop for 200 ms (no probe answered, no watch event read, no lease renewed).
    const busy: Reconcile = () => {
      const until = performance.now() + 5;
      while (performance.now() < until);
      return Promise.resolve({});
    };
    const s = setup(busy, { workers: 1, parents: Array.from({ length: 40 }, (_, i) => thing(`app-${i}`)) });
    let doneWhenLoopTurned = -1;
    setImmediate(() => (doneWhenLoopTurned = s.outcomes.length));
    s.running = s.controller.run();
    while (s.outcomes.length < 40) await flush();
    assert.ok(doneWhenLoopTurned >= 0 && doneWhenLoopTurned < 40, `the loop turned after ${doneWhenLoopTurned} of 40`);
    await s.controller.stop();
    await s.running;
  });

  test("rejects a bad worker count and informers added while running", async () => {
    assert.throws(
      () => new Controller({ name: "x", reconcile: ok, workers: 0, log: pino({ level: "silent" }) }),
      /workers must be a positive integer/,
    );
    const s = setup(ok);
    await start(s);
    assert.throws(() => s.controller.watch(new FakeInformer<Thing>(), objectKey), /before run/);
    await s.controller.stop();
    await s.running;
  });
});

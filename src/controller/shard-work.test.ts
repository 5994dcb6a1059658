import assert from "node:assert/strict";
import { describe, test } from "node:test";
import fc from "fast-check";
import { pino } from "pino";
import { Controller } from "./controller.js";
import { FakeClock, flush } from "./fake-clock.test-helpers.js";
import { FakeInformer } from "./fake-informer.test-helpers.js";
import { FakeLeases } from "./fake-leases.test-helpers.js";
import { ShardElector } from "./shard-election.js";
import { ShardWork } from "./shard-work.js";
import { shareOf } from "./shards.js";

const SHARES = 4;
const log = pino({ level: "silent" });

interface App {
  metadata: { namespace: string; name: string; resourceVersion?: string };
}

const app = (name: string, rv = "1"): App => ({ metadata: { namespace: "shop", name, resourceVersion: rv } });

/**
 * Replicas as src/wiring/ wires them: each a real ShardElector on shared fake Leases, a ShardWork between it and a
 * real Controller, its own informer of the apps (filtered by share when `filtered`), all on one fake clock.
 * Each reconcile notes what it saw: an app found in the cache is "reconciled" at its resourceVersion and
 * enters the replica's per-app state; one not found has its per-app state dropped, as the CanaryReconciler
 * does. A reconcile of an app the server has but the cache lacks is a read of an unloaded cache: noted.
 */
function world(ids: string[], names: string[], filtered = false) {
  const clock = new FakeClock();
  let calling: string | undefined;
  const leases = new FakeLeases(() => calling);
  const server = new Map<string, App>(names.map((n) => [`shop/${n}`, app(n)]));
  const unloadedReads: string[] = [];
  const replicas = ids.map((id) => {
    const reconciled: string[] = [];
    const dropped: string[] = [];
    const state = new Set<string>();
    // The informer and the elector are made before the ShardWork they call into.
    const late: { work?: ShardWork } = {};
    const keyOf = (a: App): string => `${a.metadata.namespace}/${a.metadata.name}`;
    const apps = new FakeInformer<App>(
      [...server.values()],
      filtered ? (a) => late.work?.keepsKey(keyOf(a)) ?? false : undefined,
    );
    const elector = new ShardElector({
      namespace: "ns",
      name: "group",
      shares: SHARES,
      identity: id,
      client: leases,
      log,
      clock,
      onGained: (share) => late.work?.gained(share),
      onLost: (share) => late.work?.lost(share),
      onResumed: (share) => late.work?.resumed(share),
    });
    const drop = (key: string): void => {
      dropped.push(key);
      state.delete(key);
    };
    const controller: Controller = new Controller({
      name: id,
      log,
      clock,
      reconcile: async (key) => {
        await (late.work as ShardWork).fence.run(key, () => {
          const [namespace = "", name = ""] = key.split("/");
          const cached = apps.get(namespace, name);
          if (cached === undefined && server.has(key)) unloadedReads.push(`${id}: ${key}`);
          if (cached === undefined) drop(key);
          else {
            reconciled.push(`${key}@${cached.metadata.resourceVersion}`);
            state.add(key);
          }
          return Promise.resolve();
        });
      },
    });
    const work = new ShardWork({
      shares: SHARES,
      termOf: (share) => elector.term(share),
      queue: controller.queue,
      appKeys: () => apps.list().map(keyOf),
      ...(filtered ? { caches: [{ load: () => apps.load(), prune: () => apps.prune() }] } : {}),
      dropped: drop,
      log,
    });
    late.work = work;
    controller.watch(apps, (a) => (work.accepts(keyOf(a)) ? keyOf(a) : undefined));
    return { id, apps, elector, controller, reconciled, dropped, state, running: controller.run() };
  });
  /** `n` rounds of every replica, 2 s apart, letting the workers run after each. */
  const rounds = async (n: number): Promise<void> => {
    for (let i = 0; i < n; i++) {
      for (const r of replicas) await round(r.id);
      await clock.advance(2_000);
      await flush();
    }
  };
  const round = async (id: string): Promise<void> => {
    const r = replicas.find((x) => x.id === id);
    if (r === undefined) return;
    calling = id;
    await r.elector.round();
    calling = undefined;
    await flush();
  };
  /** A change on the server, seen by every replica's watch. */
  const set = (a: App): void => {
    server.set(`${a.metadata.namespace}/${a.metadata.name}`, a);
    for (const r of replicas) r.apps.set(a);
  };
  const remove = (name: string): void => {
    server.delete(`shop/${name}`);
    for (const r of replicas) r.apps.remove("shop", name);
  };
  const stop = async (): Promise<void> => {
    for (const r of replicas) {
      await r.controller.stop();
      await r.running;
    }
  };
  return { clock, leases, server, replicas, unloadedReads, rounds, round, set, remove, stop };
}

/** One replica: the world's only one. */
function replica(names: string[], filtered = false) {
  const w = world(["a"], names, filtered);
  const r = w.replicas[0];
  if (r === undefined) throw new Error("no replica");
  return { ...w, ...r, apps: { set: w.set, remove: w.remove } };
}

describe("ShardWork", () => {
  test("an app deleted while its share's fence is closed has its per-app state dropped, by its reconcile or when the share is given up", async () => {
    const r = replica(["web", "gone", "api"]);
    await r.rounds(2);
    assert.equal(r.elector.heldShares().length, SHARES, "one replica holds every share");
    assert.deepEqual([...r.reconciled].sort(), ["shop/api@1", "shop/gone@1", "shop/web@1"]);

    // The rounds run late (a busy event loop): past the renew deadline the fence closes, before any round has
    // given the shares up. Meanwhile one app is deleted and another changed.
    await r.clock.advance(11_000);
    assert.equal(r.elector.term(shareOf("shop/gone", SHARES)), undefined, "the fence is closed");
    r.apps.remove("gone");
    r.apps.set(app("web", "2"));
    await r.clock.advance(100);
    await flush();

    // The rounds run again: the renewals land late, nobody took the shares meanwhile, so their fences open
    // again under the same terms, and what was remembered while they were closed is queued.
    assert.deepEqual(r.elector.heldShares(), [], "every fence closed");
    await r.rounds(3);
    assert.deepEqual(
      r.elector.heldShares(),
      Array.from({ length: SHARES }, (_, share) => share),
    );
    assert.equal(r.elector.heldShares().length, SHARES);
    assert.ok(r.dropped.includes("shop/gone"), `the deleted app's state was dropped: ${JSON.stringify(r.dropped)}`);
    assert.ok(
      r.reconciled.includes("shop/web@2"),
      `the app changed meanwhile was reconciled: ${r.reconciled.join(" ")}`,
    );
    assert.deepEqual([...r.state].sort(), ["shop/api", "shop/web"]);
    await r.stop();
  });

  test("an app added while nobody holds its share is reconciled once a replica takes the share", async () => {
    for (const filtered of [false, true]) {
      const r = replica([], filtered);
      // A replica takes nothing in its first round: the app arrives while its share is held by nobody.
      await r.round("a");
      r.apps.set(app("new"));
      await flush();
      assert.deepEqual(r.reconciled, []);
      await r.rounds(2);
      assert.deepEqual(r.reconciled, ["shop/new@1"], filtered ? "filtered caches" : "caches of every app");
      await r.stop();
    }
  });

  test("filtered caches: a share gained is loaded before any of its apps is reconciled; a share lost is let go", async () => {
    const names = Array.from({ length: 40 }, (_, i) => `app-${i}`);
    const w = world(["a", "b"], names, true);
    await w.rounds(4);
    const [a, b] = w.replicas;
    if (a === undefined || b === undefined) throw new Error("two replicas");
    assert.equal(a.elector.heldShares().length + b.elector.heldShares().length, SHARES);
    for (const r of [a, b]) {
      const mine = names.filter((n) => r.elector.heldShares().includes(shareOf(`shop/${n}`, SHARES)));
      assert.deepEqual(
        r.apps
          .list()
          .map((x) => x.metadata.name)
          .sort(),
        [...mine].sort(),
        `${r.id} caches its apps only`,
      );
      assert.deepEqual([...r.state].sort(), mine.map((n) => `shop/${n}`).sort());
    }
    // b leaves: a takes its shares, and loads their apps first (a slow list here).
    const moved = names.map((n) => `shop/${n}`).find((k) => b.elector.heldShares().includes(shareOf(k, SHARES)));
    if (moved === undefined) throw new Error("b holds an app");
    let listed = (): void => undefined;
    a.apps.loadGate = new Promise((resolve) => (listed = resolve));
    await b.controller.stop();
    await b.elector.stop();
    w.replicas.splice(1, 1);
    await w.rounds(2);
    assert.equal(a.elector.heldShares().length, SHARES);
    const before = a.reconciled.length;
    // A requeue (an analysis that ended, a step due) for an app of a share still loading waits for the load.
    a.controller.queue.add(moved);
    await w.rounds(1);
    assert.equal(a.reconciled.length, before, "nothing of a loading share is reconciled");
    listed();
    await w.rounds(1);
    assert.equal(a.apps.list().length, names.length);
    assert.deepEqual([...a.state].sort(), names.map((n) => `shop/${n}`).sort());
    assert.deepEqual(w.unloadedReads, [], "no reconcile read a share's cache before it was loaded");
    await w.stop();
  });

  test("property: whatever the events, late rounds and moves, every app is reconciled at its last version by its share's holder, and no replica keeps state for an app it does not hold", async () => {
    const names = ["a0", "a1", "a2", "a3", "a4", "a5", "a6", "a7"];
    const op = fc.oneof(
      fc.record({ kind: fc.constant("set" as const), name: fc.constantFrom(...names) }),
      fc.record({ kind: fc.constant("remove" as const), name: fc.constantFrom(...names) }),
      fc.record({ kind: fc.constant("round" as const), who: fc.constantFrom("r1", "r2", "r3") }),
      fc.record({ kind: fc.constant("late" as const), ms: fc.integer({ min: 9_000, max: 16_000 }) }),
      fc.record({ kind: fc.constant("tick" as const) }),
    );
    await fc.assert(
      fc.asyncProperty(fc.array(op, { maxLength: 40 }), fc.boolean(), async (ops, filtered) => {
        const w = world(["r1", "r2", "r3"], names.slice(0, 4), filtered);
        let version = 1;
        await w.rounds(3);
        for (const o of ops) {
          if (o.kind === "set") w.set(app(o.name, String(++version)));
          else if (o.kind === "remove") w.remove(o.name);
          else if (o.kind === "round") await w.round(o.who);
          else if (o.kind === "late") await w.clock.advance(o.ms);
          else await w.clock.advance(2_000);
          await flush();
        }
        // Then the rounds run on time again until every share is settled.
        await w.rounds(12);
        const holder = (key: string) => w.replicas.find((r) => r.elector.heldShares().includes(shareOf(key, SHARES)));
        for (const [key, a] of w.server) {
          const r = holder(key);
          assert.ok(r !== undefined, `${key}: its share is held`);
          assert.ok(
            r.reconciled.includes(`${key}@${a.metadata.resourceVersion}`),
            `${key}@${a.metadata.resourceVersion} reconciled by ${r.id}`,
          );
          assert.ok(r.state.has(key), `${r.id} keeps ${key}`);
        }
        for (const r of w.replicas) {
          for (const key of r.state) {
            assert.ok(w.server.has(key) && holder(key) === r, `${r.id} keeps no state for ${key}`);
          }
        }
        assert.deepEqual(w.unloadedReads, []);
        await w.stop();
      }),
      { numRuns: 60 },
    );
  });
});

describe("ShardWork loads", () => {
  test("shares gained while a load is in flight are loaded together by the next; each stays closed until its load ends", async () => {
    const held = new Set<number>();
    const loads: { shares: readonly number[]; done: () => void }[] = [];
    const queued: string[] = [];
    const work = new ShardWork({
      shares: SHARES,
      termOf: (share) => (held.has(share) ? `term-${share}` : undefined),
      queue: { add: (key) => queued.push(key), remove: () => undefined },
      appKeys: () => [],
      caches: [
        {
          load: (shares) => new Promise<void>((done) => loads.push({ shares, done })),
          prune: () => undefined,
        },
      ],
      log,
    });
    const keyIn = (share: number): string => {
      for (let i = 0; ; i++) if (shareOf(`shop/app-${i}`, SHARES) === share) return `shop/app-${i}`;
    };
    held.add(0).add(1).add(2);
    work.gained(0);
    work.gained(1);
    work.gained(2);
    assert.deepEqual(
      loads.map((l) => l.shares),
      [[0]],
      "one load at a time",
    );
    assert.deepEqual(work.loadingShares(), [0, 1, 2]);
    assert.equal(work.fence.owns(keyIn(1)), false, "a share loading is not usable");
    loads[0]?.done();
    await flush();
    assert.deepEqual(
      loads.map((l) => l.shares),
      [[0], [1, 2]],
    );
    assert.deepEqual(work.loadingShares(), [1, 2]);
    assert.equal(work.fence.owns(keyIn(0)), true);
    loads[1]?.done();
    await flush();
    assert.deepEqual(work.loadingShares(), []);
    assert.equal(work.fence.owns(keyIn(2)), true);
    work.gained(3);
    held.add(3);
    assert.deepEqual(loads.at(-1)?.shares, [3], "nothing in flight: a gained share is loaded at once");
    loads.at(-1)?.done();
    await flush();
    assert.deepEqual(work.loadingShares(), []);
  });

  test("a share whose fence opens again under the same term is not loaded again: its remembered keys are queued", async () => {
    const held = new Set<number>([0]);
    let loads = 0;
    const queued: string[] = [];
    const work = new ShardWork({
      shares: SHARES,
      termOf: (share) => (held.has(share) ? "term" : undefined),
      queue: { add: (key) => queued.push(key), remove: () => undefined },
      appKeys: () => [],
      caches: [{ load: () => Promise.resolve(void loads++), prune: () => assert.fail("nothing is pruned") }],
      log,
    });
    let key = "";
    for (let i = 0; key === ""; i++) if (shareOf(`shop/app-${i}`, SHARES) === 0) key = `shop/app-${i}`;
    work.gained(0);
    await flush();
    assert.equal(loads, 1);
    // The renewal runs late: the fence closes, and an event meanwhile is remembered, not queued.
    held.delete(0);
    work.offer(key);
    assert.deepEqual(queued, []);
    assert.equal(work.keeps(0), true, "the caches keep the share's objects");
    held.add(0);
    work.resumed(0);
    assert.deepEqual(queued, [key]);
    assert.equal(loads, 1, "no load");
  });
});

import { describe, test } from "node:test";
import assert from "node:assert/strict";
import type { Lease } from "./lease.js";
import { pino } from "pino";
import type { Clock } from "../time/clock.js";
import { FakeClock, flush } from "./fake-clock.test-helpers.js";
import { LeaderElector, type LeadGate, type LeaseClient, type StopReason } from "./leader-election.js";
import { recordFromSpec } from "./lease.js";

function conflict(): Error {
  return Object.assign(new Error("Operation cannot be fulfilled: the object has been modified"), { code: 409 });
}

/** One Lease in memory, with resourceVersion preconditions like the API server's. */
class FakeLeases implements LeaseClient {
  lease: Lease | undefined;
  private rv = 0;
  writes = 0;
  /** When set, calls reject with it. */
  failWith: Error | undefined;

  private gate<T>(fn: () => T): Promise<T> {
    if (this.failWith) return Promise.reject(this.failWith);
    try {
      return Promise.resolve(fn());
    } catch (error) {
      return Promise.reject(error instanceof Error ? error : new Error(String(error)));
    }
  }

  private store(lease: Lease): Lease {
    this.rv++;
    this.writes++;
    // As on the wire: plain JSON, MicroTimes as strings.
    this.lease = JSON.parse(
      JSON.stringify({ ...lease, metadata: { ...lease.metadata, resourceVersion: `${this.rv}` } }),
    ) as Lease;
    return structuredClone(this.lease);
  }

  get(): Promise<Lease | undefined> {
    return this.gate(() => (this.lease ? structuredClone(this.lease) : undefined));
  }

  create(lease: Lease): Promise<Lease> {
    return this.gate(() => {
      if (this.lease) throw conflict();
      return this.store(lease);
    });
  }

  replace(lease: Lease): Promise<Lease> {
    return this.gate(() => {
      if (lease.metadata?.resourceVersion !== this.lease?.metadata?.resourceVersion) throw conflict();
      return this.store(lease);
    });
  }

  holder(): string | undefined {
    return recordFromSpec(this.lease?.spec).holderIdentity;
  }
}

/** One replica's connection to the Lease store; `dead` makes every call hang, as for a frozen process. */
class Connection implements LeaseClient {
  dead = false;
  constructor(private readonly leases: FakeLeases) {}
  private call<T>(fn: () => Promise<T>): Promise<T> {
    return this.dead ? new Promise(() => undefined) : fn();
  }
  get(): Promise<Lease | undefined> {
    return this.call(() => this.leases.get());
  }
  create(lease: Lease): Promise<Lease> {
    return this.call(() => this.leases.create(lease));
  }
  replace(lease: Lease): Promise<Lease> {
    return this.call(() => this.leases.replace(lease));
  }
}

interface Candidate {
  connection: Connection;
  elector: LeaderElector;
  events: string[];
  result: Promise<StopReason>;
  abort: AbortController;
  leadingSignal: AbortSignal | undefined;
  /** Resolve to let onStoppedLeading return. */
  finishStopping: () => void;
}

function candidate(
  identity: string,
  leases: FakeLeases,
  clock: Clock,
  opts: { slowStop?: boolean; release?: boolean; gate?: LeadGate } = {},
): Candidate {
  const state = {
    events: [] as string[],
    leadingSignal: undefined as AbortSignal | undefined,
    finishStopping: (): void => undefined,
  };
  const connection = new Connection(leases);
  const elector = new LeaderElector({
    namespace: "canaryapp-system",
    name: "canaryapp-controller",
    identity,
    client: connection,
    clock,
    random: () => 0,
    releaseOnShutdown: opts.release,
    ...(opts.gate !== undefined ? { gate: opts.gate } : {}),
    log: pino({ level: "silent" }),
    onStartedLeading: (signal) => {
      state.leadingSignal = signal;
      state.events.push("started");
    },
    onStoppedLeading: (reason) => {
      state.events.push(`stopped:${reason}`);
      if (!opts.slowStop) return;
      return new Promise<void>((resolve) => (state.finishStopping = resolve));
    },
    onNewLeader: (holder) => state.events.push(`leader:${holder}`),
  });
  const abort = new AbortController();
  return {
    connection,
    elector,
    abort,
    events: state.events,
    get leadingSignal() {
      return state.leadingSignal;
    },
    finishStopping: () => state.finishStopping(),
    result: elector.run(abort.signal),
  };
}

describe("LeaderElector", () => {
  test("the sharding epoch's gate: told no before taking the lease, it does not; told no once taken, it hands it back", async () => {
    const clock = new FakeClock();
    const leases = new FakeLeases();
    const asked: string[] = [];
    let answer = { acquire: false, confirm: false };
    const a = candidate("a", leases, clock, {
      gate: {
        mayLead: (phase) => {
          asked.push(phase);
          return Promise.resolve(answer[phase]);
        },
        standBy: () => Promise.reject(new Error("not asked while the lease is free")),
      },
    });
    await flush();
    assert.deepEqual(asked, ["acquire"]);
    assert.equal(leases.holder(), undefined, "not taken");
    answer = { acquire: true, confirm: false };
    await clock.advance(2_000);
    await flush();
    assert.deepEqual(asked, ["acquire", "acquire", "confirm"]);
    assert.equal(leases.holder(), undefined, "taken, then handed back");
    assert.equal(leases.writes, 2);
    assert.equal(a.elector.isLeader(), false);
    answer = { acquire: true, confirm: true };
    await clock.advance(2_000);
    await flush();
    assert.equal(a.elector.isLeader(), true);
    assert.deepEqual(a.events, ["started"]);
    // Leading, the gate is not asked again: the lease held keeps the epoch at 1 share.
    const count = asked.length;
    await clock.advance(10_000);
    await flush();
    assert.equal(asked.length, count);
    a.abort.abort();
    await a.result;
  });

  test("a standby behind a live leader does not ask the epoch (no list); it stands by each round until the lease expires", async () => {
    const clock = new FakeClock();
    const leases = new FakeLeases();
    const leader = candidate("a", leases, clock);
    await flush();
    const calls: string[] = [];
    const gate: LeadGate = {
      mayLead: (phase) => {
        calls.push(phase);
        return Promise.resolve(true);
      },
      standBy: () => {
        calls.push("standBy");
        return Promise.resolve();
      },
    };
    const standby = candidate("b", leases, clock, { gate, release: false });
    await flush();
    for (let i = 0; i < 5; i++) await clock.advance(4_400);
    assert.ok(calls.length >= 5, `${calls.length} rounds`);
    assert.deepEqual(new Set(calls), new Set(["standBy"]), "only standing by while the leader renews");
    // The leader stops renewing (cut off without releasing): once the lease has expired, the epoch is asked.
    leader.abort.abort();
    await leader.result;
    calls.length = 0;
    for (let i = 0; i < 10 && !standby.elector.isLeader(); i++) await clock.advance(4_400);
    assert.equal(standby.elector.isLeader(), true);
    assert.deepEqual(calls.slice(-2), ["acquire", "confirm"]);
    standby.abort.abort();
    await standby.result;
  });

  test("creates a missing lease and leads", async () => {
    const clock = new FakeClock();
    const leases = new FakeLeases();
    const a = candidate("a", leases, clock);
    await flush();
    assert.equal(a.elector.isLeader(), true);
    assert.deepEqual(a.events, ["started"]);
    assert.equal(leases.holder(), "a");
    const record = recordFromSpec(leases.lease?.spec);
    assert.equal(record.leaseDurationSeconds, 15);
    assert.equal(record.leaseTransitions, 0);
    assert.equal(record.renewTimeMs, clock.now());
    a.abort.abort();
    await a.result;
  });

  test("renews every retry period", async () => {
    const clock = new FakeClock();
    const leases = new FakeLeases();
    const a = candidate("a", leases, clock);
    await flush();
    const start = clock.now();
    await clock.advance(2000);
    assert.equal(recordFromSpec(leases.lease?.spec).renewTimeMs, start + 2000);
    await clock.advance(2000);
    assert.equal(recordFromSpec(leases.lease?.spec).renewTimeMs, start + 4000);
    assert.equal(recordFromSpec(leases.lease?.spec).acquireTimeMs, start, "acquireTime kept");
    a.abort.abort();
    await a.result;
  });

  test("a second replica waits while the leader renews, and takes over once the lease expires", async () => {
    const clock = new FakeClock();
    const leases = new FakeLeases();
    const a = candidate("a", leases, clock);
    await flush();
    const b = candidate("b", leases, clock);
    await clock.advance(60_000);
    assert.equal(b.elector.isLeader(), false, "the leader keeps renewing");
    assert.deepEqual(b.events, ["leader:a"]);
    // The leader freezes: its calls never answer, so it stops renewing.
    a.connection.dead = true;
    const lastRenewal = recordFromSpec(leases.lease?.spec).renewTimeMs ?? 0;
    let tookOverAt: number | undefined;
    for (let t = 0; t < 30_000 && tookOverAt === undefined; t += 100) {
      await clock.advance(100);
      if (b.elector.isLeader()) tookOverAt = clock.now();
    }
    assert.ok(tookOverAt !== undefined, "b took over");
    assert.ok(tookOverAt > lastRenewal + 15_000, "not before the lease expired");
    assert.ok(tookOverAt <= lastRenewal + 15_000 + 2 * 2000 * 2.2, "within a few retry periods after");
    assert.equal(leases.holder(), "b");
    assert.equal(recordFromSpec(leases.lease?.spec).leaseTransitions, 1);
    assert.deepEqual(a.events, ["started", "stopped:lost"], "a gave up at its renew deadline");
    assert.equal(a.leadingSignal?.aborted, true);
    assert.equal(await a.result, "lost");
    b.abort.abort();
    await b.result;
  });

  for (const leaderOffset of [-30_000, 30_000]) {
    test(`clocks 30 s apart (the leader's ${leaderOffset > 0 ? "ahead" : "behind"}): nobody takes over while the leader renews, and once it stops the lease moves within a duration and a retry period`, async (t) => {
      const clock = new FakeClock();
      const skewed = (offsetMs: number): Clock => ({
        now: () => clock.now() + offsetMs,
        schedule: (fn, delayMs) => clock.schedule(fn, delayMs),
      });
      const leases = new FakeLeases();
      const a = candidate("a", leases, skewed(leaderOffset));
      await flush();
      assert.equal(a.elector.isLeader(), true);
      const b = candidate("b", leases, skewed(0));
      const c = candidate("c", leases, skewed(-leaderOffset));
      await clock.advance(60_000);
      assert.equal(leases.holder(), "a", "the leader kept the lease");
      assert.deepEqual(a.events, ["started"]);
      assert.deepEqual(b.events, ["leader:a"]);
      assert.deepEqual(c.events, ["leader:a"]);

      a.connection.dead = true;
      const lastRenewal = (recordFromSpec(leases.lease?.spec).renewTimeMs ?? 0) - leaderOffset;
      let tookOverAt: number | undefined;
      for (let i = 0; i < 600 && tookOverAt === undefined; i++) {
        await clock.advance(100);
        if (b.elector.isLeader() || c.elector.isLeader()) tookOverAt = clock.now();
      }
      t.diagnostic(
        `took over ${tookOverAt === undefined ? "never" : tookOverAt - lastRenewal} ms after the last renewal`,
      );
      assert.ok(tookOverAt !== undefined, "a standby took over");
      assert.ok(tookOverAt > lastRenewal + 15_000, "not before the lease expired");
      assert.ok(tookOverAt <= lastRenewal + 15_000 + 2 * 2000, "within a retry period after the duration");
      assert.equal([b, c].filter((x) => x.elector.isLeader()).length, 1);
      b.abort.abort();
      c.abort.abort();
      await Promise.all([b.result, c.result]);
    });
  }

  test("of two replicas racing for an expired lease exactly one wins", async () => {
    const clock = new FakeClock();
    const leases = new FakeLeases();
    leases.lease = {
      metadata: { name: "canaryapp-controller", namespace: "canaryapp-system", resourceVersion: "0" },
      spec: { holderIdentity: "dead", leaseDurationSeconds: 15, renewTime: new Date(clock.now() - 60_000) },
    };
    const a = candidate("a", leases, clock);
    const b = candidate("b", leases, clock);
    await flush();
    // Neither has seen the lease before: however old its renewTime, each waits a duration from its first read.
    await clock.advance(15_000);
    assert.equal([a, b].filter((c) => c.elector.isLeader()).length, 0, "not before a duration from the first read");
    await clock.advance(5_000);
    assert.equal([a, b].filter((c) => c.elector.isLeader()).length, 1);
    assert.equal(leases.holder(), a.elector.isLeader() ? "a" : "b");
    a.abort.abort();
    b.abort.abort();
    await Promise.all([a.result, b.result]);
  });

  test("renewal failures up to the renew deadline lose leadership; the lease is not released", async () => {
    const clock = new FakeClock();
    const leases = new FakeLeases();
    const a = candidate("a", leases, clock);
    await flush();
    leases.failWith = Object.assign(new Error("connect ECONNREFUSED"), { code: "ECONNREFUSED" });
    await clock.advance(8000);
    assert.equal(a.elector.isLeader(), true, "still within the renew deadline");
    await clock.advance(2000);
    assert.equal(a.elector.isLeader(), false);
    assert.equal(await a.result, "lost");
    assert.deepEqual(a.events, ["started", "stopped:lost"]);
    leases.failWith = undefined;
    assert.equal(leases.holder(), "a", "a lost replica does not touch the lease");
  });

  test("a lease taken by someone else ends leadership at the next renewal", async () => {
    const clock = new FakeClock();
    const leases = new FakeLeases();
    const a = candidate("a", leases, clock);
    await flush();
    const lease = leases.lease;
    assert.ok(lease?.spec);
    await leases.replace({ ...lease, spec: { ...lease.spec, holderIdentity: "intruder" } });
    await clock.advance(2000);
    assert.equal(await a.result, "lost");
    assert.deepEqual(a.events, ["started", "leader:intruder", "stopped:lost"]);
  });

  test("shutdown: keeps renewing while the caller drains, then releases so a successor takes over at once", async () => {
    const clock = new FakeClock();
    const leases = new FakeLeases();
    const a = candidate("a", leases, clock, { slowStop: true });
    await flush();
    const b = candidate("b", leases, clock);
    await flush();
    a.abort.abort();
    await flush();
    assert.deepEqual(a.events, ["started", "stopped:shutdown"]);
    assert.equal(a.leadingSignal?.aborted, true);
    await clock.advance(30_000); // a long drain
    assert.equal(leases.holder(), "a", "still renewed during the drain");
    assert.equal(b.elector.isLeader(), false);
    a.finishStopping();
    assert.equal(await a.result, "shutdown");
    assert.equal(a.elector.isLeader(), false);
    const released = recordFromSpec(leases.lease?.spec);
    assert.equal(released.holderIdentity, undefined);
    assert.equal(released.leaseDurationSeconds, 1);
    await clock.advance(2000 * 2.2);
    assert.equal(b.elector.isLeader(), true, "the successor did not wait for the old lease to expire");
    b.abort.abort();
    await b.result;
  });

  test("releaseOnShutdown false leaves the lease to expire", async () => {
    const clock = new FakeClock();
    const leases = new FakeLeases();
    const a = candidate("a", leases, clock, { release: false });
    await flush();
    a.abort.abort();
    assert.equal(await a.result, "shutdown");
    assert.equal(leases.holder(), "a");
  });

  test("aborted before being elected: no callbacks", async () => {
    const clock = new FakeClock();
    const leases = new FakeLeases();
    const a = candidate("a", leases, clock);
    await flush();
    const b = candidate("b", leases, clock);
    await flush();
    b.abort.abort();
    assert.equal(await b.result, "shutdown");
    assert.deepEqual(b.events, ["leader:a"]);
    a.abort.abort();
    await a.result;
  });

  test("aborted while an API call hangs: resolves at once, and a late win is handed back", async () => {
    const clock = new FakeClock();
    const leases = new FakeLeases();
    let answer: () => void = () => undefined;
    let calls = 0;
    const slow: LeaseClient = {
      // Only the first read hangs.
      get: () => (calls++ > 0 ? leases.get() : new Promise((resolve) => (answer = () => resolve(leases.get())))),
      create: (lease) => leases.create(lease),
      replace: (lease) => leases.replace(lease),
    };
    const events: string[] = [];
    const abort = new AbortController();
    const elector = new LeaderElector({
      namespace: "n",
      name: "l",
      identity: "a",
      client: slow,
      clock,
      log: pino({ level: "silent" }),
      onStartedLeading: () => void events.push("started"),
      onStoppedLeading: () => void events.push("stopped"),
    });
    const result = elector.run(abort.signal);
    await flush();
    abort.abort();
    assert.equal(await result, "shutdown");
    answer(); // the read answers late: the lease is created, then released
    for (let i = 0; i < 5; i++) await flush();
    assert.deepEqual(events, []);
    assert.equal(leases.writes, 2, "created, then released");
    assert.equal(recordFromSpec(leases.lease?.spec).holderIdentity, undefined);
  });

  test("rejects timings that would let two replicas lead at once", () => {
    const base = {
      namespace: "n",
      name: "l",
      client: new FakeLeases(),
      log: pino({ level: "silent" }),
      onStartedLeading: () => undefined,
      onStoppedLeading: () => undefined,
    };
    assert.throws(
      () => new LeaderElector({ ...base, leaseDurationMs: 10_000, renewDeadlineMs: 10_000 }),
      /leaseDuration/,
    );
    assert.throws(() => new LeaderElector({ ...base, renewDeadlineMs: 2000, retryPeriodMs: 2000 }), /renewDeadline/);
    assert.match(new LeaderElector(base).identity, /^.+_[0-9a-f]{8}$/, "hostname + random suffix");
  });
});

import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { pino } from "pino";
import { sleep, type Clock } from "../time/clock.js";
import { FakeClock } from "./fake-clock.test-helpers.js";
import { Fence, NotOwnedError } from "./fence.js";
import { FakeLeases } from "./fake-leases.test-helpers.js";
import { recordFromSpec } from "./lease.js";
import { ShardElector } from "./shard-election.js";
import { shareLeaseName } from "./shard-leases.js";
import { shareOf } from "./shards.js";

const SHARES = 12;
const log = pino({ level: "silent" });

/** `clock` read `offsetMs` off: a node whose wall clock is set wrong (its timers run at the same pace). */
function skewed(clock: FakeClock, offsetMs: number): Clock {
  return { now: () => clock.now() + offsetMs, schedule: (fn, delayMs) => clock.schedule(fn, delayMs) };
}

/**
 * Replicas driven round by round on one fake clock (each may read it off by a fixed offset); each replica's
 * Lease calls fail while it is cut off.
 */
function world() {
  const clock = new FakeClock();
  let calling: string | undefined;
  const leases = new FakeLeases(() => calling);
  const gained = new Map<string, number[]>();
  const lost = new Map<string, number[]>();
  const resumed = new Map<string, number[]>();
  const replicas = new Map<string, ShardElector>();
  const add = (identity: string, offsetMs = 0, shares = SHARES): ShardElector => {
    gained.set(identity, []);
    lost.set(identity, []);
    resumed.set(identity, []);
    const elector = new ShardElector({
      namespace: "ns",
      name: "group",
      shares,
      identity,
      client: {
        list: (...a) => leases.list(...a),
        create: (...a) => leases.create(...a),
        replace: (...a) => leases.replace(...a),
        delete: (...a) => leases.delete(...a),
        get: (...a) => leases.get(...a),
      },
      log,
      clock: offsetMs === 0 ? clock : skewed(clock, offsetMs),
      onGained: (share) => gained.get(identity)?.push(share),
      onLost: (share) => lost.get(identity)?.push(share),
      onResumed: (share) => resumed.get(identity)?.push(share),
    });
    replicas.set(identity, elector);
    return elector;
  };
  /** One round of every replica still running, one after the other, then `ms` of time. */
  const rounds = async (n: number, ms = 2_000, skip: ReadonlySet<string> = new Set()): Promise<void> => {
    for (let i = 0; i < n; i++) {
      for (const [identity, elector] of replicas) {
        if (skip.has(identity)) continue;
        calling = identity;
        await elector.round();
        calling = undefined;
      }
      await clock.advance(ms);
    }
  };
  /** Every share held by exactly one replica's fence (never two). */
  const owners = (): (string | undefined)[] =>
    Array.from({ length: SHARES }, (_, share) => {
      const holding = [...replicas].filter(([, e]) => e.term(share) !== undefined).map(([id]) => id);
      assert.ok(holding.length <= 1, `share ${share} fenced in by ${holding.join(" and ")}`);
      return holding[0];
    });
  return { clock, leases, add, rounds, owners, gained, lost, resumed, replicas };
}

describe("ShardElector", () => {
  test("three replicas split the shares 4/4/4 within a few rounds, and hold them at rest", async () => {
    const w = world();
    for (const id of ["a", "b", "c"]) w.add(id);
    await w.rounds(3);
    const owners = w.owners();
    assert.ok(
      owners.every((o) => o !== undefined),
      `all shares held: ${owners.join(",")}`,
    );
    for (const id of ["a", "b", "c"]) assert.equal(owners.filter((o) => o === id).length, 4, id);
    for (let share = 0; share < SHARES; share++) assert.equal(w.leases.holderOf(share, SHARES), owners[share]);
    // At rest: Leases are written only when their renewal is due (every 6 s), not every round.
    const writes = w.leases.writes;
    await w.rounds(30); // 60 s
    const perSecond = (w.leases.writes - writes) / 60;
    assert.ok(perSecond <= (SHARES + 3) / 6 + 0.01, `${perSecond} Lease writes per second at rest`);
    assert.deepEqual(w.owners(), owners, "nothing moved at rest");
  });

  test("a replica that dies loses its shares to the others once its Leases expire; none is fenced in twice", async (t) => {
    const w = world();
    for (const id of ["a", "b", "c"]) w.add(id);
    await w.rounds(3);
    const before = w.owners();
    const dead = new Set(["c"]);
    let tookOverAfterMs: number | undefined;
    for (let t = 2_000; t <= 30_000; t += 2_000) {
      await w.rounds(1, 2_000, dead);
      const owners = w.owners(); // asserts no share is held by two
      if (tookOverAfterMs === undefined && owners.every((o) => o === "a" || o === "b")) tookOverAfterMs = t;
    }
    t.diagnostic(
      `shares of c held by the others ${tookOverAfterMs} ms after it stopped (counted after each round's 2 s)`,
    );
    assert.ok(tookOverAfterMs !== undefined, "a and b took every share");
    // The dead replica's Leases expire 15 s after its last renewal; the next round takes them.
    assert.ok(tookOverAfterMs <= 15_000 + 2 * 2_000 + 4_000, `took over after ${tookOverAfterMs} ms`);
    const after = w.owners();
    const counts = ["a", "b"].map((id) => after.filter((o) => o === id).length);
    assert.deepEqual(counts, [6, 6]);
    // Those of a and b that did not have to move stayed where they were (rendezvous).
    const movedOfSurvivors = before.filter((o, s) => o !== "c" && after[s] !== o).length;
    assert.ok(movedOfSurvivors <= 2, `${movedOfSurvivors} shares of the survivors moved`);
    // A dead replica's fence closes on its own: after renewDeadline without a renewal, it holds nothing.
    assert.deepEqual(w.replicas.get("c")?.heldShares(), []);
  });

  test("a new replica gets its fair share: the others release, it takes; each move is one release then one take", async () => {
    const w = world();
    for (const id of ["a", "b"]) w.add(id);
    await w.rounds(3);
    assert.deepEqual(
      ["a", "b"].map((id) => w.owners().filter((o) => o === id).length),
      [6, 6],
    );
    const count = (m: Map<string, number[]>) => [...m.values()].reduce((n, l) => n + l.length, 0);
    const [lostBefore, gainedBefore] = [count(w.lost), count(w.gained)];
    w.add("c");
    await w.rounds(4);
    const owners = w.owners();
    assert.deepEqual(
      ["a", "b", "c"].map((id) => owners.filter((o) => o === id).length),
      [4, 4, 4],
    );
    // Every share that moved was given up by one replica and then taken by another (owners() asserted that no
    // share was ever fenced in by two at once).
    assert.equal(count(w.lost) - lostBefore, count(w.gained) - gainedBefore);
    assert.ok(count(w.gained) - gainedBefore <= 2 * 4, "c's 4 shares and at most as many more moved");
  });

  test("a replica cut off from the API server stops acting before its Leases expire for the others", async () => {
    const w = world();
    for (const id of ["a", "b"]) w.add(id);
    await w.rounds(3);
    const mine = w.replicas.get("a")?.heldShares() ?? [];
    assert.ok(mine.length > 0);
    w.leases.cutOff.add("a");
    // 10 s (renewDeadline) after a's last renewal at most, its fence closes; b may take them only after 15 s.
    let closedAt: number | undefined;
    let takenAt: number | undefined;
    for (let t = 2_000; t <= 30_000; t += 2_000) {
      await w.rounds(1);
      if (closedAt === undefined && w.replicas.get("a")?.heldShares().length === 0) closedAt = t;
      if (takenAt === undefined && mine.every((s) => w.replicas.get("b")?.term(s) !== undefined)) takenAt = t;
      w.owners();
    }
    assert.ok(closedAt !== undefined && takenAt !== undefined, `closed ${closedAt}, taken ${takenAt}`);
    assert.ok(closedAt < takenAt, `a stopped (${closedAt} ms) before b took its shares (${takenAt} ms)`);
    assert.deepEqual(w.lost.get("a")?.sort(), [...mine].sort());
    // Back online: a rejoins and gets its fair share again, in new terms.
    w.leases.cutOff.delete("a");
    await w.rounds(4);
    assert.equal(w.replicas.get("a")?.heldShares().length, 6);
  });

  test("a renewal that lands after the renew deadline opens the fence again under the same term: no share is given up or taken anew", async () => {
    const w = world();
    const a = w.add("a");
    await w.rounds(3);
    assert.equal(a.heldShares().length, SHARES);
    const terms = Array.from({ length: SHARES }, (_, share) => a.term(share));
    await w.clock.advance(4_000); // renewals due
    w.leases.slowWrites = () => sleep(w.clock, 5_000);
    const round = a.round();
    // The membership's renewal, then the shares' (in parallel), 5 s each: they land after the renew deadline,
    // and after the lease duration too, but nobody wrote the Leases meanwhile (each write is at the version listed).
    await w.clock.advance(9_000);
    assert.deepEqual(a.heldShares(), [], "the fence is closed while the renewals are late");
    await w.clock.advance(2_000);
    await round;
    w.leases.slowWrites = undefined;
    assert.deepEqual(w.lost.get("a"), []);
    assert.deepEqual(
      Array.from({ length: SHARES }, (_, share) => a.term(share)),
      terms,
      "held again under the same terms",
    );
    // Told, so that the work remembered while the fence was closed is queued again.
    assert.equal(w.resumed.get("a")?.length, SHARES);
    const gained = w.gained.get("a")?.length;
    await w.rounds(2);
    assert.equal(w.gained.get("a")?.length, gained, "nothing taken anew (no new load)");
    assert.deepEqual(w.lost.get("a"), []);
  });

  test("a late renewal that finds the share taken by another gives it up", async () => {
    const w = world();
    w.add("a");
    await w.rounds(3);
    const b = w.add("b");
    w.leases.cutOff.add("a");
    // a is cut off: past the lease duration b may take a's shares (b gets them all: a is no member any more).
    await w.rounds(12, 2_000, new Set(["a"]));
    w.owners();
    assert.equal(b.heldShares().length, SHARES);
    w.leases.cutOff.delete("a");
    await w.rounds(1);
    w.owners();
    assert.equal(w.lost.get("a")?.length, SHARES);
    assert.deepEqual(w.resumed.get("a"), []);
  });

  test("a graceful stop hands every share over at once and leaves the group", async () => {
    const w = world();
    for (const id of ["a", "b"]) w.add(id);
    await w.rounds(3);
    const a = w.replicas.get("a");
    assert.ok(a);
    await a.stop();
    w.replicas.delete("a");
    assert.equal(w.leases.members(), 1, "a's membership Lease is gone");
    await w.rounds(2);
    assert.equal(w.replicas.get("b")?.heldShares().length, SHARES, "b took them without waiting for expiry");
  });

  describe("with clocks 30 s apart (renewTime written 30 s ahead of or behind the others')", () => {
    const OFFSETS = { a: 0, b: 30_000, c: -30_000 } as const;
    const count = (m: Map<string, number[]>): number => [...m.values()].reduce((n, l) => n + l.length, 0);

    test("no share changes hands while every holder renews", async () => {
      const w = world();
      for (const [id, offset] of Object.entries(OFFSETS)) w.add(id, offset);
      await w.rounds(3);
      const owners = w.owners();
      for (const id of Object.keys(OFFSETS)) assert.equal(owners.filter((o) => o === id).length, 4, id);
      const [gained, lost] = [count(w.gained), count(w.lost)];
      for (let i = 0; i < 60; i++) {
        await w.rounds(1); // 120 s in all
        assert.deepEqual(w.owners(), owners, `nothing moved (round ${i})`);
      }
      assert.equal(count(w.lost), lost, "no share given up");
      assert.equal(count(w.gained), gained, "no share taken");
    });

    for (const dead of Object.keys(OFFSETS)) {
      test(`the shares of ${dead} (clock ${OFFSETS[dead as keyof typeof OFFSETS] / 1000} s), which stops renewing, move within a lease duration and a round of the others' clocks, never before`, async (t) => {
        const w = world();
        for (const [id, offset] of Object.entries(OFFSETS)) w.add(id, offset);
        await w.rounds(6);
        const theirs = w.owners().flatMap((o, share) => (o === dead ? [share] : []));
        assert.equal(theirs.length, 4);
        // When (on the shared clock) the dead replica last wrote each of its Leases.
        const offset = OFFSETS[dead as keyof typeof OFFSETS];
        const lastWrite = new Map(
          theirs.map((share) => {
            const renewed = recordFromSpec(
              w.leases.leases.get(shareLeaseName("group", share, SHARES))?.spec,
            ).renewTimeMs;
            return [share, (renewed ?? 0) - offset];
          }),
        );
        const stoppedAt = w.clock.now();
        const skip = new Set([dead]);
        let movedAfterMs: number | undefined;
        const takenAfterRenewal = new Map<number, number>();
        for (let i = 0; i < 30 && movedAfterMs === undefined; i++) {
          await w.rounds(1, 0, skip);
          const owners = w.owners(); // asserts no share is fenced in by two
          for (const share of theirs) {
            if (owners[share] === undefined || owners[share] === dead || takenAfterRenewal.has(share)) continue;
            const since = w.clock.now() - (lastWrite.get(share) ?? 0);
            takenAfterRenewal.set(share, since);
            assert.ok(since > 15_000, `share ${share} taken ${since} ms after its holder's last renewal`);
          }
          if (owners.every((o) => o !== undefined && o !== dead)) movedAfterMs = w.clock.now() - stoppedAt;
          await w.clock.advance(2_000);
        }
        t.diagnostic(
          `shares of ${dead} held by the others ${movedAfterMs} ms after it stopped, ` +
            `each ${[...takenAfterRenewal.values()].join("/")} ms after its last renewal`,
        );
        assert.ok(movedAfterMs !== undefined, "the others took every share");
        assert.ok(movedAfterMs <= 15_000 + 2_000, `moved ${movedAfterMs} ms after it stopped`);
      });
    }

    // A replacement (a new identity) cannot tell yet whether the dead replica's Leases are renewed: it has not
    // watched them for a lease duration. The others can: they delete its membership Lease and free its shares,
    // so the replacement takes those assigned to it as if the dead replica had stopped gracefully.
    for (const lateMs of [2_000, 8_000, 14_000]) {
      test(`a replacement started ${lateMs / 1000} s after a replica died: every share held for good within a lease duration and two rounds of the death`, async (t) => {
        const w = world();
        for (const [id, offset] of Object.entries(OFFSETS)) w.add(id, offset);
        await w.rounds(6);
        const stoppedAt = w.clock.now();
        const dead = new Set(["c"]);
        let settledAtMs: number | undefined;
        for (let i = 0; i < 30; i++) {
          if (w.clock.now() - stoppedAt === lateMs) w.add("d");
          await w.rounds(1, 0, dead);
          const owners = w.owners();
          if (owners.some((o) => o === undefined || o === "c")) settledAtMs = undefined;
          else settledAtMs ??= w.clock.now() - stoppedAt;
          await w.clock.advance(2_000);
        }
        t.diagnostic(`every share held for good ${settledAtMs} ms after c stopped (d started at ${lateMs} ms)`);
        assert.ok(settledAtMs !== undefined, "every share held at the end");
        assert.ok(settledAtMs <= Math.max(15_000, lateMs) + 2 * 2_000, `settled ${settledAtMs} ms after c stopped`);
        const owners = w.owners();
        assert.deepEqual(
          ["a", "b", "d"].map((id) => owners.filter((o) => o === id).length),
          [4, 4, 4],
        );
      });
    }

    test("a replica started after the others died takes their shares one lease duration after it first read them", async (t) => {
      const w = world();
      w.add("a", 30_000);
      w.add("b", -30_000);
      await w.rounds(3);
      // Both die without handing anything over; a minute later a new replica starts.
      const dead = new Set(["a", "b"]);
      await w.rounds(30, 2_000, dead);
      const d = w.add("d");
      const startedAt = w.clock.now();
      let tookAllAfterMs: number | undefined;
      for (let i = 0; i < 30 && tookAllAfterMs === undefined; i++) {
        await w.rounds(1, 0, dead);
        w.owners();
        if (d.heldShares().length === SHARES) tookAllAfterMs = w.clock.now() - startedAt;
        await w.clock.advance(2_000);
      }
      t.diagnostic(`a replica started after the others died held every share ${tookAllAfterMs} ms after it started`);
      assert.ok(tookAllAfterMs !== undefined, "d took every share");
      // It cannot tell a dead holder from a live one before the Lease has stood still for a duration.
      assert.ok(tookAllAfterMs > 15_000, `took them ${tookAllAfterMs} ms after it started`);
      assert.ok(tookAllAfterMs <= 15_000 + 2 * 2_000, `took them ${tookAllAfterMs} ms after it started`);
    });
  });

  test("a dead member's Lease is deleted once it has expired; a live one whose Lease was deleted creates it again", async () => {
    const w = world();
    for (const id of ["a", "b"]) w.add(id);
    await w.rounds(3);
    w.replicas.delete("b"); // b dies for good
    assert.equal(w.leases.members(), 2);
    const membership = [...w.leases.leases.values()].find(
      (l) => l.metadata?.name?.includes("-member-") && recordFromSpec(l.spec).holderIdentity === "b",
    );
    const lastWrite = recordFromSpec(membership?.spec).renewTimeMs ?? 0;
    let deletedAfterMs: number | undefined;
    for (let i = 0; i < 20 && deletedAfterMs === undefined; i++) {
      await w.rounds(1, 0);
      if (w.leases.members() === 1) deletedAfterMs = w.clock.now() - lastWrite;
      await w.clock.advance(2_000);
    }
    // It expires for a 15 s after a saw that write (at a's next round at the latest).
    assert.ok(deletedAfterMs !== undefined && deletedAfterMs > 15_000 && deletedAfterMs <= 15_000 + 2 * 2_000);

    const c = w.add("c");
    await w.rounds(3);
    for (const lease of [...w.leases.leases.values()]) {
      if (recordFromSpec(lease.spec).holderIdentity === "c" && lease.metadata?.name?.includes("-member-")) {
        await w.leases.delete("ns", lease.metadata.name, undefined);
      }
    }
    assert.equal(w.leases.members(), 1);
    await w.rounds(1);
    assert.equal(w.leases.members(), 2, "c created its membership Lease again");
    assert.deepEqual(w.lost.get("c"), [], "and gave nothing up");
    assert.ok(c.heldShares().length > 0);
  });
});

describe("ShardElector across share counts (the sharding epoch)", () => {
  const APPS = Array.from({ length: 60 }, (_, i) => `ns/app-${i}`);
  const COUNTS = new Map<string, number>();

  /** The replicas whose fence would let a write for each app through now; asserts never two for one app. */
  function actors(replicas: Map<string, ShardElector>): Map<string, string | undefined> {
    const out = new Map<string, string | undefined>();
    for (const app of APPS) {
      const acting = [...replicas]
        .filter(([id, e]) => e.term(shareOf(app, COUNTS.get(id) ?? SHARES)) !== undefined)
        .map(([id]) => id);
      assert.ok(acting.length <= 1, `${app} fenced in by ${acting.join(" and ")}`);
      out.set(app, acting[0]);
    }
    return out;
  }

  async function handover(graceful: boolean) {
    const w = world();
    const add = (id: string, shares: number) => {
      COUNTS.set(id, shares);
      return w.add(id, 0, shares);
    };
    add("old-a", 4);
    add("old-b", 4);
    await w.rounds(3);
    assert.ok(
      [...actors(w.replicas).values()].every((o) => o === "old-a" || o === "old-b"),
      "4 shares held",
    );
    // The new replicas join (a rolling update's surge): members, not acting, while the old ones act on.
    const newA = add("new-a", 8);
    const newB = add("new-b", 8);
    const stopped = new Set<string>();
    for (let i = 0; i < 10; i++) {
      await w.rounds(1, 2_000, stopped);
      const who = actors(w.replicas);
      assert.ok(
        [...who.values()].every((o) => o === "old-a" || o === "old-b"),
        "the old count keeps acting",
      );
    }
    assert.deepEqual(newA.heldShares(), []);
    assert.equal(newA.epoch().acting, false);
    assert.match(newA.epoch().waitingFor ?? "", /member old-a runs 4 shares/);
    // The old replicas go, one after the other.
    let stoppedAt = 0;
    for (const id of ["old-a", "old-b"]) {
      if (graceful) await w.replicas.get(id)?.stop();
      stopped.add(id);
      stoppedAt = w.clock.now();
      await w.rounds(1, 2_000, stopped);
      actors(w.replicas);
    }
    let allActingAfterMs: number | undefined;
    for (let t = 0; t < 60_000 && allActingAfterMs === undefined; t += 2_000) {
      await w.rounds(1, 2_000, stopped);
      const who = actors(w.replicas);
      if ([...who.values()].every((o) => o === "new-a" || o === "new-b")) {
        allActingAfterMs = w.clock.now() - stoppedAt;
      }
    }
    assert.ok(allActingAfterMs !== undefined, "the new count acts on every app");
    assert.equal(newB.epoch().acting, true);
    return { w, allActingAfterMs };
  }

  test("4 → 8 shares, the old replicas stopped gracefully: the new ones act once the old have left, never both", async (t) => {
    const { allActingAfterMs } = await handover(true);
    t.diagnostic(`every app acted on by the new count ${allActingAfterMs} ms after the last old replica stopped`);
    assert.ok(allActingAfterMs <= 3 * 2_000, `${allActingAfterMs} ms`);
  });

  test("4 → 8 shares, the old replicas killed: the new ones wait for their Leases to expire, never both", async (t) => {
    const { allActingAfterMs } = await handover(false);
    t.diagnostic(`every app acted on by the new count ${allActingAfterMs} ms after the last old replica died`);
    assert.ok(allActingAfterMs >= 15_000 - 2_000, `${allActingAfterMs} ms: not before the old Leases expired`);
    assert.ok(allActingAfterMs <= 15_000 + 4 * 2_000, `${allActingAfterMs} ms`);
  });

  test("an unsharded leader's Lease (count 1) held: sharded replicas wait for it; released, they move the epoch", async () => {
    const w = world();
    COUNTS.set("s", 4);
    const s = w.add("s", 0, 4);
    await w.leases.create({
      metadata: { namespace: "ns", name: "group" },
      spec: { holderIdentity: "leader", leaseDurationSeconds: 15 },
    });
    const renewLeader = async () => {
      const lease = await w.leases.get("ns", "group");
      if (lease?.spec) lease.spec.renewTime = new Date(w.clock.now()).toISOString();
      if (lease) await w.leases.replace(lease);
    };
    for (let i = 0; i < 12; i++) {
      await renewLeader();
      await w.rounds(1);
      assert.deepEqual(s.heldShares(), [], "not while the leader renews");
    }
    const lease = await w.leases.get("ns", "group");
    if (lease?.spec) lease.spec.holderIdentity = "";
    if (lease) await w.leases.replace(lease);
    await w.rounds(2);
    assert.deepEqual(s.heldShares(), [0, 1, 2, 3], "released: the epoch moved to 4 and the shares were taken");
  });

  test("the epoch moving under a replica that has just taken a share: the share is never used", async () => {
    const w = world();
    COUNTS.set("a", 4);
    const a = w.add("a", 0, 4);
    await w.rounds(3);
    assert.deepEqual(a.heldShares(), [0, 1, 2, 3]);
    // A member of 8 shares is live, and the epoch is recorded at 8 (as a replica of 8 would record it once it
    // saw nothing of 4 live: forced here, as if a's Leases had been missed).
    await w.leases.create({
      metadata: {
        namespace: "ns",
        name: "group-member-x",
        labels: {
          "canaryapp.io/shard-group": "group",
          "canaryapp.io/lease-role": "member",
          "canaryapp.io/shard-count": "8",
        },
      },
      spec: { holderIdentity: "x", leaseDurationSeconds: 15 },
    });
    const epoch = await w.leases.get("ns", "group-epoch");
    assert.ok(epoch?.metadata?.labels);
    epoch.metadata.labels["canaryapp.io/shard-count"] = "8";
    await w.leases.replace(epoch);
    await w.rounds(1);
    assert.deepEqual(a.heldShares(), [], "a sees the epoch moved: it stops acting and releases");
    assert.equal(a.epoch().acting, false);
  });
});

describe("Fence", () => {
  test("lets a reconcile write only while its share is held under the term it began in", async () => {
    const terms = new Map<number, string>();
    const fence = new Fence({ shares: 4, termOf: (s) => terms.get(s) });
    const key = "shop/web";
    const share = fence.shareOf(key);
    assert.equal(await fence.run(key, () => Promise.resolve("ran")), undefined, "not owned: not run");
    assert.throws(() => fence.check("apply"), NotOwnedError, "outside any reconcile");

    terms.set(share, "1@100");
    assert.equal(fence.owns(key), true);
    const steps: string[] = [];
    await fence.run(key, async () => {
      fence.check("apply");
      steps.push("first write");
      terms.delete(share); // lost mid-reconcile
      assert.throws(() => fence.check("status"), /no longer held/);
      terms.set(share, "2@200"); // taken back: a new term
      assert.throws(() => fence.check("status"), /newer term/);
      await Promise.resolve();
      steps.push("end");
    });
    assert.deepEqual(steps, ["first write", "end"]);
    await fence.run(key, () => Promise.resolve(fence.check("apply")));
  });
});

import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { pino } from "pino";
import { sleep } from "../api/clock.js";
import { FakeClock } from "./fake-clock.js";
import { Fence, NotOwnedError } from "./fence.js";
import { FakeLeases } from "./fake-leases.js";
import { ShardElector } from "./shard-election.js";

const SHARES = 12;
const log = pino({ level: "silent" });

/** Replicas driven round by round on one fake clock; each replica's Lease calls fail while it is cut off. */
function world() {
  const clock = new FakeClock();
  let calling: string | undefined;
  const leases = new FakeLeases(() => calling);
  const gained = new Map<string, number[]>();
  const lost = new Map<string, number[]>();
  const resumed = new Map<string, number[]>();
  const replicas = new Map<string, ShardElector>();
  const add = (identity: string): ShardElector => {
    gained.set(identity, []);
    lost.set(identity, []);
    resumed.set(identity, []);
    const elector = new ShardElector({
      namespace: "ns",
      name: "group",
      shares: SHARES,
      identity,
      client: {
        list: (...a) => leases.list(...a),
        create: (...a) => leases.create(...a),
        replace: (...a) => leases.replace(...a),
        delete: (...a) => leases.delete(...a),
        get: (...a) => leases.get(...a),
      },
      log,
      clock,
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
    for (let share = 0; share < SHARES; share++) assert.equal(w.leases.holderOf(share), owners[share]);
    // At rest: Leases are written only when their renewal is due (every 6 s), not every round.
    const writes = w.leases.writes;
    await w.rounds(30); // 60 s
    const perSecond = (w.leases.writes - writes) / 60;
    assert.ok(perSecond <= (SHARES + 3) / 6 + 0.01, `${perSecond} Lease writes per second at rest`);
    assert.deepEqual(w.owners(), owners, "nothing moved at rest");
  });

  test("a replica that dies loses its shares to the others once its Leases expire; none is fenced in twice", async () => {
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

  test("a long-gone member's Lease is deleted", async () => {
    const w = world();
    for (const id of ["a", "b"]) w.add(id);
    await w.rounds(3);
    w.replicas.delete("b"); // b dies for good
    assert.equal(w.leases.members(), 2);
    await w.rounds(160); // 320 s
    assert.equal(w.leases.members(), 1);
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

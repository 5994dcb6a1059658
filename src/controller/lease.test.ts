import { describe, test } from "node:test";
import assert from "node:assert/strict";
import {
  acquiredRecord,
  canAcquire,
  hasExpired,
  isLeaseExpired,
  microTime,
  observeLease,
  recordFromSpec,
  releasedRecord,
  specFromRecord,
  unchangedFor,
  type LeaseObservation,
  type LeaseRecord,
  type LeaseSpec,
} from "./lease.js";

const T = Date.UTC(2024, 0, 1, 12, 0, 0);

/** Whether `identity` may take the Lease at `nowMs` after reading it as `reads` tell, in order. */
function acquirableAfter(reads: Read[], identity: string, nowMs: number): boolean {
  let seen: LeaseObservation | undefined;
  for (const r of reads) {
    seen = observeLease(seen, { metadata: { resourceVersion: r.resourceVersion }, spec: r.spec }, r.atMs);
  }
  if (seen === undefined) throw new Error("no read");
  return canAcquire(seen, identity, nowMs);
}

/** One read of a Lease by the observing replica: when (its own clock) and what it read. */
interface Read {
  atMs: number;
  resourceVersion: string;
  spec: LeaseSpec;
}

/**
 * The expiry rule (client-go's `tryAcquireOrRenew`): a Lease held by another expires for this replica only when
 * the record it reads has not changed for leaseDurationSeconds of this replica's own clock, however the holder's
 * clock runs. The observer's clock reads T at the start of every case; the holder's renewTime is its own clock's.
 */
describe("lease expiry by local observation", () => {
  const spec = (renewTimeMs: number, more: Partial<LeaseSpec> = {}): LeaseSpec => ({
    holderIdentity: "holder",
    leaseDurationSeconds: 15,
    acquireTime: microTime(T - 600_000),
    renewTime: microTime(renewTimeMs),
    leaseTransitions: 2,
    ...more,
  });
  const read = (atMs: number, resourceVersion: string, s: LeaseSpec): Read => ({ atMs, resourceVersion, spec: s });
  const cases: { name: string; reads: Read[]; nowMs: number; identity?: string; acquirable: boolean }[] = [
    { name: "first read, renewed just now", reads: [read(T, "1", spec(T))], nowMs: T, acquirable: false },
    {
      name: "first read of a Lease renewed an hour ago: fresh for one duration from the read",
      reads: [read(T, "1", spec(T - 3_600_000))],
      nowMs: T + 15_000,
      acquirable: false,
    },
    {
      name: "first read of a Lease renewed an hour ago, one duration later",
      reads: [read(T, "1", spec(T - 3_600_000))],
      nowMs: T + 15_001,
      acquirable: true,
    },
    {
      name: "unchanged for exactly the duration",
      reads: [read(T, "1", spec(T)), read(T + 8_000, "1", spec(T))],
      nowMs: T + 15_000,
      acquirable: false,
    },
    {
      name: "unchanged for just over the duration",
      reads: [read(T, "1", spec(T)), read(T + 8_000, "1", spec(T))],
      nowMs: T + 15_001,
      acquirable: true,
    },
    {
      name: "holder's clock 30 s behind, renewing: not expired",
      reads: [read(T, "1", spec(T - 30_000)), read(T + 6_000, "2", spec(T - 24_000))],
      nowMs: T + 12_000,
      acquirable: false,
    },
    {
      name: "holder's clock 30 s behind, renewals stopped: expired one duration after the last change was seen",
      reads: [read(T, "1", spec(T - 30_000)), read(T + 6_000, "2", spec(T - 24_000))],
      nowMs: T + 21_001,
      acquirable: true,
    },
    {
      name: "holder's clock 30 s ahead, renewals stopped: expired one duration after the last change was seen",
      reads: [read(T, "1", spec(T + 30_000)), read(T + 6_000, "2", spec(T + 36_000))],
      nowMs: T + 21_001,
      acquirable: true,
    },
    {
      name: "holder's clock 30 s ahead, renewals stopped, not yet a duration",
      reads: [read(T, "1", spec(T + 30_000)), read(T + 6_000, "2", spec(T + 36_000))],
      nowMs: T + 21_000,
      acquirable: false,
    },
    {
      name: "a change of holder counts as a change",
      reads: [read(T, "1", spec(T)), read(T + 10_000, "2", spec(T, { holderIdentity: "other", leaseTransitions: 3 }))],
      nowMs: T + 20_000,
      acquirable: false,
    },
    {
      name: "a write that changes nothing in the spec (a label) counts as a change: its resourceVersion moved",
      reads: [read(T, "1", spec(T)), read(T + 10_000, "2", spec(T))],
      nowMs: T + 20_000,
      acquirable: false,
    },
    {
      name: "the same record read again does not reset the time",
      reads: [read(T, "1", spec(T)), read(T + 5_000, "1", spec(T)), read(T + 10_000, "1", spec(T))],
      nowMs: T + 15_001,
      acquirable: true,
    },
    {
      name: "the record's own duration counts (40 s)",
      reads: [read(T, "1", spec(T, { leaseDurationSeconds: 40 }))],
      nowMs: T + 39_000,
      acquirable: false,
    },
    {
      name: "released (no holder): free at once",
      reads: [read(T, "1", spec(T + 30_000, { holderIdentity: "", leaseDurationSeconds: 1 }))],
      nowMs: T,
      acquirable: true,
    },
    {
      name: "held by this replica",
      reads: [read(T, "1", spec(T + 30_000))],
      nowMs: T,
      identity: "holder",
      acquirable: true,
    },
    {
      name: "held, without a duration: expired",
      reads: [read(T, "1", spec(T, { leaseDurationSeconds: undefined }))],
      nowMs: T,
      acquirable: true,
    },
  ];
  for (const c of cases) {
    test(`${c.name}: acquirable=${c.acquirable}`, () => {
      assert.equal(acquirableAfter(c.reads, c.identity ?? "observer", c.nowMs), c.acquirable);
    });
  }

  test("hasExpired: first read of the record + duration < now, whatever renewTime says", () => {
    const lease = { metadata: { resourceVersion: "7" }, spec: spec(T + 3_600_000) };
    const seen = observeLease(undefined, lease, 1_000);
    assert.equal(observeLease(seen, structuredClone(lease), 9_000), seen, "the same record keeps its time");
    assert.equal(hasExpired(seen, 16_000), false);
    assert.equal(hasExpired(seen, 16_001), true);
    assert.equal(unchangedFor(seen, 16_001), 15_001);
  });
});

describe("lease records", () => {
  const held: LeaseRecord = {
    holderIdentity: "a",
    leaseDurationSeconds: 15,
    renewTimeMs: T,
    acquireTimeMs: T - 60_000,
  };

  test("isLeaseExpired (an onlooker on the holders' clock): renewTime + duration < now", () => {
    assert.equal(isLeaseExpired(held, T + 15_000), false);
    assert.equal(isLeaseExpired(held, T + 15_001), true);
    assert.equal(isLeaseExpired({ holderIdentity: "a", leaseDurationSeconds: 15 }, T), true, "no renewTime");
  });

  test("renewing keeps acquireTime and transitions, moves renewTime", () => {
    const renewed = acquiredRecord({ ...held, leaseTransitions: 3 }, "a", T + 2000, 15_000);
    assert.deepEqual(renewed, { ...held, leaseTransitions: 3, renewTimeMs: T + 2000 });
  });

  test("taking over counts a transition and sets acquireTime", () => {
    const taken = acquiredRecord({ ...held, leaseTransitions: 3 }, "b", T + 20_000, 15_000);
    assert.deepEqual(taken, {
      holderIdentity: "b",
      leaseDurationSeconds: 15,
      acquireTimeMs: T + 20_000,
      renewTimeMs: T + 20_000,
      leaseTransitions: 4,
    });
    assert.equal(acquiredRecord(undefined, "b", T, 15_000).leaseTransitions, 0, "a new lease starts at 0");
    assert.equal(acquiredRecord(undefined, "b", T, 1500).leaseDurationSeconds, 2, "seconds round up");
  });

  test("release clears the holder, keeps transitions, one-second duration", () => {
    assert.deepEqual(releasedRecord({ ...held, leaseTransitions: 2 }, T), {
      holderIdentity: undefined,
      leaseDurationSeconds: 1,
      acquireTimeMs: T,
      renewTimeMs: T,
      leaseTransitions: 2,
    });
  });

  test("spec round trip: MicroTime on the wire, strings or Dates read back", () => {
    const spec = specFromRecord({ ...held, renewTimeMs: T + 123 });
    const wire = JSON.parse(JSON.stringify(spec)) as Record<string, unknown>;
    assert.equal(wire.renewTime, "2024-01-01T12:00:00.123000Z", "microsecond precision, as the API server wants");
    assert.equal(recordFromSpec(wire).renewTimeMs, T + 123);
    assert.equal(recordFromSpec({ renewTime: new Date(T) }).renewTimeMs, T);
    assert.equal(recordFromSpec({ holderIdentity: "" }).holderIdentity, undefined, "empty holder means free");
    assert.deepEqual(recordFromSpec(undefined), {
      holderIdentity: undefined,
      leaseDurationSeconds: undefined,
      acquireTimeMs: undefined,
      renewTimeMs: undefined,
      leaseTransitions: undefined,
    });
  });
});

import { describe, test } from "node:test";
import assert from "node:assert/strict";
import {
  acquiredRecord,
  canAcquire,
  isLeaseExpired,
  recordFromSpec,
  releasedRecord,
  specFromRecord,
  type LeaseRecord,
} from "./lease.js";

const T = Date.UTC(2024, 0, 1, 12, 0, 0);

describe("lease decisions", () => {
  const held: LeaseRecord = {
    holderIdentity: "a",
    leaseDurationSeconds: 15,
    renewTimeMs: T,
    acquireTimeMs: T - 60_000,
  };

  const cases: { name: string; record: LeaseRecord; identity: string; now: number; acquirable: boolean }[] = [
    {
      name: "free lease (no holder)",
      record: { leaseDurationSeconds: 15, renewTimeMs: T },
      identity: "b",
      now: T,
      acquirable: true,
    },
    { name: "held by us", record: held, identity: "a", now: T + 1000, acquirable: true },
    { name: "held by another, fresh", record: held, identity: "b", now: T + 1000, acquirable: false },
    { name: "held by another, exactly at expiry", record: held, identity: "b", now: T + 15_000, acquirable: false },
    { name: "held by another, just expired", record: held, identity: "b", now: T + 15_001, acquirable: true },
    { name: "released (duration 1 s)", record: releasedRecord(held, T), identity: "b", now: T, acquirable: true },
    {
      name: "no renewTime",
      record: { holderIdentity: "a", leaseDurationSeconds: 15 },
      identity: "b",
      now: T,
      acquirable: true,
    },
    {
      name: "renewed in the future (skew)",
      record: { ...held, renewTimeMs: T + 5000 },
      identity: "b",
      now: T + 16_000,
      acquirable: false,
    },
  ];
  for (const c of cases) {
    test(`${c.name}: acquirable=${c.acquirable}`, () => {
      assert.equal(canAcquire(c.record, c.identity, c.now), c.acquirable);
    });
  }

  test("isLeaseExpired: renewTime + duration < now", () => {
    assert.equal(isLeaseExpired(held, T + 14_999), false);
    assert.equal(isLeaseExpired(held, T + 15_001), true);
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

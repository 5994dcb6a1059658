import assert from "node:assert/strict";
import { describe, test } from "node:test";
import fc from "fast-check";
import type { BatchPause, CanaryStage } from "../api/types.js";
import { batchReplicas, batchWeightSequence } from "../api/batch-sizes.js";
import { batchComplete, batchPlanReplicas, batchSurge, oldReplicas, pausesAfter, replicaShare } from "./batches.js";

const sequence = (total: number, count: number): number[] =>
  Array.from({ length: count }, (_, i) => batchReplicas(total, count, i + 1));

describe("batchReplicas: batch N runs 1 + (N−1) × round(total / count), the last all of them", () => {
  const cases: { total: number; count: number; replicas: number[] }[] = [
    { total: 4, count: 2, replicas: [1, 4] },
    { total: 4, count: 4, replicas: [1, 2, 3, 4] },
    { total: 10, count: 3, replicas: [1, 4, 10] },
    { total: 5, count: 4, replicas: [1, 2, 3, 5] },
    { total: 7, count: 2, replicas: [1, 7] },
    { total: 100, count: 3, replicas: [1, 34, 100] },
    { total: 9, count: 4, replicas: [1, 3, 5, 9] },
    { total: 1, count: 1, replicas: [1] },
    { total: 6, count: 1, replicas: [6] },
    { total: 3, count: 3, replicas: [1, 2, 3] },
  ];
  for (const c of cases) {
    test(`${c.total} replicas in ${c.count} batches: ${c.replicas.join(", ")}`, () => {
      assert.deepEqual(sequence(c.total, c.count), c.replicas);
    });
  }

  test("the weight sequence is each batch's share of the replicas", () => {
    assert.deepEqual(batchWeightSequence(4, 2), [25, 100]);
    assert.deepEqual(batchWeightSequence(10, 3), [10, 40, 100]);
  });
});

describe("oldReplicas: total − new available, never below 0", () => {
  const cases: [number, number, number][] = [
    [4, 0, 4],
    [4, 1, 3],
    [4, 4, 0],
    [4, 6, 0],
    [4, -1, 4],
  ];
  for (const [total, available, old] of cases) {
    test(`${total} total, ${available} new available → ${old} old`, () => {
      assert.equal(oldReplicas(total, available), old);
    });
  }
});

describe("replicaShare: the new version's share of the ready pods", () => {
  const cases: [number, number, number][] = [
    [0, 4, 0],
    [1, 3, 25],
    [4, 0, 100],
    [0, 0, 0],
    [1, 300, 1], // a ready pod is never given nothing
    [300, 1, 99], // nor is the old one's last ready pod
    [2, 2, 50],
  ];
  for (const [fresh, old, share] of cases) {
    test(`${fresh} new ready, ${old} old ready → ${share}%`, () => assert.equal(replicaShare(fresh, old), share));
  }
});

describe("pausesAfter: which batches wait for approval", () => {
  const cases: { pause: BatchPause; count: number; pausing: number[] }[] = [
    { pause: "first", count: 3, pausing: [1] },
    { pause: "first", count: 1, pausing: [] },
    { pause: "all", count: 3, pausing: [1, 2] },
    { pause: "none", count: 3, pausing: [] },
  ];
  for (const c of cases) {
    test(`${c.pause} of ${c.count}: after ${c.pausing.join(", ") || "none"}`, () => {
      const pausing = [1, 2, 3].filter((b) => b <= c.count && pausesAfter(c.pause, b, c.count));
      assert.deepEqual(pausing, c.pausing);
    });
  }
});

describe("batchPlanReplicas: what each Deployment runs", () => {
  const base = {
    total: 4,
    count: 2,
    primaryReplicas: 4 as number | undefined,
    primaryAvailable: 4 as number | undefined,
  };
  const cases: {
    name: string;
    stage: CanaryStage;
    step: number;
    secondaryAvailable: number | undefined;
    primaryReplicas?: number;
    secondaryReplicas?: number;
    primaryAvailable?: number | undefined;
    want: { primary: number; secondary: number };
  }[] = [
    {
      name: "batch 1 starting",
      stage: "WaitingForSecondary",
      step: -1,
      secondaryAvailable: 0,
      want: { primary: 4, secondary: 1 },
    },
    {
      name: "batch 1 available",
      stage: "Stepping",
      step: 0,
      secondaryAvailable: 1,
      want: { primary: 3, secondary: 1 },
    },
    {
      name: "batch 2 starting: old waits for new pods",
      stage: "Stepping",
      step: 1,
      secondaryAvailable: 1,
      want: { primary: 3, secondary: 4 },
    },
    {
      name: "batch 2 available",
      stage: "Stepping",
      step: 1,
      secondaryAvailable: 4,
      want: { primary: 0, secondary: 4 },
    },
    {
      name: "status lagging: the primary holds",
      stage: "Stepping",
      step: 1,
      secondaryAvailable: undefined,
      primaryReplicas: 3,
      want: { primary: 3, secondary: 4 },
    },
    {
      name: "status lagging never grows the primary beyond total",
      stage: "Stepping",
      step: 0,
      secondaryAvailable: undefined,
      primaryReplicas: 9,
      want: { primary: 4, secondary: 1 },
    },
    {
      name: "hand-over begins: the primary takes one batch's size",
      stage: "Promoting",
      step: 1,
      secondaryAvailable: 4,
      primaryReplicas: 0,
      primaryAvailable: 0,
      want: { primary: 2, secondary: 4 },
    },
    {
      name: "hand-over with the primary's status lagging: both hold",
      stage: "Promoting",
      step: 1,
      secondaryAvailable: 2,
      secondaryReplicas: 2,
      primaryReplicas: 4,
      primaryAvailable: undefined,
      want: { primary: 4, secondary: 2 },
    },
    {
      name: "rollback with the primary's status lagging: the secondary never grows again",
      stage: "RollingBack",
      step: 0,
      secondaryAvailable: 0,
      secondaryReplicas: 0,
      primaryReplicas: 4,
      primaryAvailable: undefined,
      want: { primary: 4, secondary: 0 },
    },
    {
      name: "hand-over half way: the secondary shrinks first",
      stage: "Promoting",
      step: 1,
      secondaryAvailable: 4,
      secondaryReplicas: 4,
      primaryReplicas: 2,
      primaryAvailable: 2,
      want: { primary: 2, secondary: 2 },
    },
    {
      name: "hand-over half way: then the primary grows",
      stage: "Promoting",
      step: 1,
      secondaryAvailable: 2,
      secondaryReplicas: 2,
      primaryReplicas: 2,
      primaryAvailable: 2,
      want: { primary: 4, secondary: 2 },
    },
    {
      name: "hand-over done",
      stage: "Promoting",
      step: 1,
      secondaryAvailable: 2,
      primaryReplicas: 4,
      primaryAvailable: 4,
      want: { primary: 4, secondary: 0 },
    },
    { name: "finalising", stage: "Finalising", step: 1, secondaryAvailable: 0, want: { primary: 4, secondary: 0 } },
    {
      name: "rollback: old back to all at once, new drains as old becomes available",
      stage: "RollingBack",
      step: 0,
      secondaryAvailable: 1,
      primaryReplicas: 3,
      primaryAvailable: 3,
      want: { primary: 4, secondary: 1 },
    },
    {
      name: "rollback: old restored, new at 0",
      stage: "RollingBack",
      step: 0,
      secondaryAvailable: 1,
      primaryReplicas: 4,
      primaryAvailable: 4,
      want: { primary: 4, secondary: 0 },
    },
  ];
  for (const c of cases) {
    test(c.name, () => {
      const got = batchPlanReplicas({
        ...base,
        stage: c.stage,
        step: c.step,
        secondaryAvailable: c.secondaryAvailable,
        ...(c.primaryReplicas !== undefined ? { primaryReplicas: c.primaryReplicas } : {}),
        ...(c.secondaryReplicas !== undefined ? { secondaryReplicas: c.secondaryReplicas } : {}),
        ...("primaryAvailable" in c ? { primaryAvailable: c.primaryAvailable } : {}),
      });
      assert.deepEqual(got, c.want);
    });
  }

  test("a batch is complete once its pods are available and the old ones scaled down", () => {
    const facts = { total: 4, count: 2, step: 0 };
    assert.equal(batchComplete({ ...facts, secondaryAvailable: 1, primaryReplicas: 4 }), false);
    assert.equal(batchComplete({ ...facts, secondaryAvailable: 0, primaryReplicas: 3 }), false);
    assert.equal(batchComplete({ ...facts, secondaryAvailable: undefined, primaryReplicas: 3 }), false);
    assert.equal(batchComplete({ ...facts, secondaryAvailable: 1, primaryReplicas: 3 }), true);
  });
});

describe("properties of the batch arithmetic", () => {
  const shape = fc
    .integer({ min: 1, max: 200 })
    .chain((total) => fc.record({ total: fc.constant(total), count: fc.integer({ min: 1, max: total }) }));

  test("batch 1 runs at least one new replica; the last runs all; never more than total", () => {
    fc.assert(
      fc.property(shape, ({ total, count }) => {
        const s = sequence(total, count);
        assert.ok(s[0]! >= 1);
        assert.equal(s.at(-1), total);
        assert.ok(s.every((r) => r >= 1 && r <= total));
      }),
    );
  });

  test("the new version's replicas never shrink from one batch to the next, and the old one's never grow", () => {
    fc.assert(
      fc.property(shape, ({ total, count }) => {
        const s = sequence(total, count);
        for (let i = 1; i < s.length; i++) {
          assert.ok(s[i]! >= s[i - 1]!, `new ${s.join(",")}`);
          assert.ok(oldReplicas(total, s[i]!) <= oldReplicas(total, s[i - 1]!));
        }
      }),
    );
  });

  test("moving forward, old + new never exceed total + batchSurge", () => {
    const world = shape.chain(({ total, count }) =>
      fc.record({
        total: fc.constant(total),
        count: fc.constant(count),
        step: fc.integer({ min: -1, max: count - 1 }),
        // The pods of the batch before are available (a batch starts only then); the current one's come up.
        progress: fc.double({ min: 0, max: 1, noNaN: true }),
        handover: fc.integer({ min: 0, max: total }),
        secondaryNow: fc.integer({ min: 0, max: total }),
      }),
    );
    fc.assert(
      fc.property(world, ({ total, count, step, progress, handover, secondaryNow }) => {
        const surge = batchSurge(total, count);
        const batch = Math.max(1, step + 1);
        const before = batch > 1 ? batchReplicas(total, count, batch - 1) : 0;
        const now = batchReplicas(total, count, batch);
        const available = before + Math.floor(progress * (now - before));
        const stepping = batchPlanReplicas({
          total,
          count,
          stage: step < 0 ? "WaitingForSecondary" : "Stepping",
          step,
          secondaryAvailable: available,
          primaryReplicas: oldReplicas(total, before),
          primaryAvailable: oldReplicas(total, before),
        });
        assert.ok(stepping.primary + stepping.secondary <= total + surge, JSON.stringify({ stepping, surge }));
        assert.ok(stepping.secondary >= 1);
        const promoting = batchPlanReplicas({
          total,
          count,
          stage: "Promoting",
          step: count - 1,
          secondaryAvailable: total - handover,
          secondaryReplicas: secondaryNow,
          primaryReplicas: handover,
          primaryAvailable: handover,
        });
        assert.ok(promoting.primary + promoting.secondary <= total + surge, JSON.stringify({ promoting, surge }));
        assert.ok(promoting.primary <= total && promoting.secondary <= total);
      }),
    );
  });
});

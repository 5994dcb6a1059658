/**
 * No promotion without evidence: whatever Prometheus says about the other checks, a test whose secondary is
 * never shown to have served traffic in a step never reaches promotion, in every analysis mode (the seed's
 * `prometheusQuery` alone, the default success rate, custom thresholds, both, the comparison with the
 * primary), and it ends.
 */
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import fc from "fast-check";
import type { AnalysisSpec, CanaryAppSpec } from "../api/types.js";
import { ANNOTATIONS } from "../api/types.js";
import { scoreCheck } from "../analysis/verdicts.js";
import type { AnalysisCheck } from "../analysis/checks.js";
import { FakeWorld } from "./fake-world.test-helpers.js";
import { V1, V2, makeApp } from "./fixtures.test-helpers.js";
import type { QueryOutcome } from "../analysis/outcome.js";

/** The analysis modes a spec can be in. */
type Mode = "seed" | "default" | "thresholds" | "seed+thresholds" | "compare";

function modeSpec(mode: Mode): Partial<CanaryAppSpec> & { analysis?: AnalysisSpec } {
  const seed = { prometheusQuery: 'increase(errors{w="{{secondary}}"}[{{stepWindow}}]) > 2' };
  const metrics = [
    { name: "request-success-rate", min: 99 },
    { name: "latency", query: 'max(latency{w="{{secondary}}"}) by (pod)', max: 500 },
  ];
  switch (mode) {
    case "seed":
      return seed;
    case "default":
      return {};
    case "thresholds":
      return { analysis: { metrics } };
    case "seed+thresholds":
      return { ...seed, analysis: { metrics } };
    case "compare":
      return { analysis: { compare: {} } };
  }
}

/** What the traffic check may see without evidence: nothing, too few requests, NaN, or a failed query. */
const noEvidence = (min: number): fc.Arbitrary<QueryOutcome> =>
  fc.oneof(
    fc.constant<QueryOutcome>({ kind: "empty" }),
    fc.integer({ min: 0, max: min - 1 }).map<QueryOutcome>((value) => ({ kind: "value", value })),
    fc.constant<QueryOutcome>({ kind: "value", value: NaN }),
    fc
      .array(fc.integer({ min: 0, max: Math.max(0, Math.floor((min - 1) / 3)) }), { minLength: 2, maxLength: 3 })
      .map<QueryOutcome>((values) => ({ kind: "values", values })),
    fc.constant<QueryOutcome>({ kind: "error", message: "connection refused" }),
  );

/** Anything at all for the other checks: good values, bad ones, nothing, several series, errors. */
const anything: fc.Arbitrary<QueryOutcome> = fc.oneof(
  fc.constant<QueryOutcome>({ kind: "empty" }),
  fc.constantFrom(0, 50, 99.5, 100, 1000, NaN).map<QueryOutcome>((value) => ({ kind: "value", value })),
  fc.constant<QueryOutcome>({ kind: "values", values: [100, 100] }),
  fc.constant<QueryOutcome>({ kind: "error", message: "timeout" }),
  // Figures with which a comparison passes.
  fc.constant<QueryOutcome>({
    kind: "values",
    values: [3000, 0, 300, 0],
    labels: [
      '{figure="primary_total"}',
      '{figure="primary_errors"}',
      '{figure="secondary_total"}',
      '{figure="secondary_errors"}',
    ],
  }),
);

/** One analysis' outcomes, the traffic check's without evidence. */
interface Answers {
  traffic: QueryOutcome;
  others: QueryOutcome[];
}

const answers = (min: number): fc.Arbitrary<Answers> =>
  fc.record({ traffic: noEvidence(min), others: fc.array(anything, { minLength: 3, maxLength: 3 }) });

type Op = { kind: "reconcile" } | { kind: "tick"; seconds: number } | { kind: "flap"; up: boolean | undefined };

const op: fc.Arbitrary<Op> = fc.oneof(
  { weight: 6, arbitrary: fc.constant<Op>({ kind: "reconcile" }) },
  { weight: 6, arbitrary: fc.integer({ min: 0, max: 120 }).map<Op>((seconds) => ({ kind: "tick", seconds })) },
  {
    weight: 1,
    arbitrary: fc.constantFrom(true, false, undefined).map<Op>((up) => ({ kind: "flap", up })),
  },
);

const setup = fc.record({
  mode: fc.constantFrom<Mode>("seed", "default", "thresholds", "seed+thresholds", "compare"),
  interval: fc.constantFrom("5s", "30s"),
  threshold: fc.integer({ min: 1, max: 3 }),
  progressDeadlineSeconds: fc.constantFrom(30, 600),
  failWhenPrometheusFails: fc.boolean(),
  manualPromotion: fc.boolean(),
  minRequests: fc.constantFrom(1, 20, 500),
  inconclusiveLimit: fc.integer({ min: 1, max: 6 }),
  trafficQuery: fc.option(fc.constant('sum(increase(reqs{w="{{secondary}}"}[{{stepWindow}}]))'), { nil: undefined }),
});

describe("no promotion without evidence", () => {
  test("in every analysis mode, whatever the other checks say, over any timing (10,000 worlds)", () => {
    fc.assert(
      fc.property(
        setup,
        fc.array(answers(500), { minLength: 1, maxLength: 8 }),
        fc.array(op, { minLength: 5, maxLength: 60 }),
        (s, script, ops) => {
          const extra = modeSpec(s.mode);
          const analysis: AnalysisSpec = {
            ...extra.analysis,
            interval: s.interval,
            threshold: s.threshold,
            progressDeadlineSeconds: s.progressDeadlineSeconds,
            failWhenPrometheusFails: s.failWhenPrometheusFails,
            manualPromotion: s.manualPromotion,
            minRequests: s.minRequests,
            inconclusiveLimit: s.inconclusiveLimit,
            ...(s.trafficQuery !== undefined ? { trafficQuery: s.trafficQuery } : {}),
          };
          const app = makeApp({ image: V1, spec: { ...extra, analysis } });
          let round = 0;
          const world = new FakeWorld(app, 3, (checks: AnalysisCheck[]) => {
            const a = script[round++ % script.length]!;
            const min = s.minRequests;
            // The traffic outcome is below this spec's minimum (the script was drawn for the largest one).
            const traffic: QueryOutcome =
              a.traffic.kind === "value" && a.traffic.value >= min
                ? { kind: "value", value: min - 1 }
                : a.traffic.kind === "values" && a.traffic.values.reduce((x, y) => x + y, 0) >= min
                  ? { kind: "empty" }
                  : a.traffic;
            let other = 0;
            return checks.map((c) =>
              scoreCheck(c, c.mode === "traffic" ? traffic : (a.others[other++ % 3] ?? traffic)),
            );
          });
          world.runToRest();
          world.setImage(V2);
          const check = (): void => {
            const step = world.reconcile();
            const canary = step.plan.status.canary;
            assert.notEqual(canary?.stage, "Promoting", "promoted without evidence");
            assert.notEqual(canary?.stage, "AwaitingPromotion", "passed the last step without evidence");
            assert.notEqual(canary?.stage, "Finalising", "promoted without evidence");
            assert.ok((canary?.step ?? 0) <= 0, "a step passed without evidence");
            assert.equal(step.plan.status.primaryImage, V1);
            assert.notEqual(step.plan.primary.image, V2);
          };
          check();
          for (const o of ops) {
            if (o.kind === "reconcile") check();
            else if (o.kind === "tick") world.time += o.seconds;
            else world.quirks = o.up === undefined ? {} : { secondaryAvailable: o.up };
          }
          // The world settles, the evidence never comes: the test ends, and never as a promotion.
          world.quirks = {};
          world.annotate(ANNOTATIONS.paused, undefined);
          for (let i = 0; i < 1000 && world.app.status?.canary !== undefined; i++) {
            world.time += 5;
            check();
          }
          assert.equal(world.app.status?.canary, undefined, "a test without evidence never ended");
          assert.equal(world.app.status?.primaryImage, V1);
          const failed = world.app.status?.failedImages?.[0];
          assert.equal(failed?.image, V2);
          assert.ok(
            ["NoEvidence", "AnalysisFailed", "SecondaryNotReady", "ProgressDeadlineExceeded"].includes(failed.reason),
            failed.reason,
          );
        },
      ),
      { numRuns: 10_000 },
    );
  });
});

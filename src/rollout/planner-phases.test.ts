/**
 * The mirror and A/B phases (ADR 0027): steps at weight 0 that copy a share of live traffic to the secondary,
 * then send it the requests matching the rules, each judged like a step, before the weighted steps; never
 * while the secondary is not ready, never once the test ends.
 */
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { normalRule } from "../api/match-rule.js";
import type { AnalysisSpec } from "../api/types.js";
import { allPass, FakeWorld } from "./fake-world.test-helpers.js";
import { V1, V2, makeApp } from "./fixtures.test-helpers.js";

const RULE = { headers: { "x-canary": { exact: "insider" } } };
const PHASES: AnalysisSpec = {
  interval: "30s",
  mirror: { percent: 20, iterations: 2 },
  match: { rules: [RULE], iterations: 1 },
  stepWeights: [30, 60],
};

function deployed(analysis: AnalysisSpec): FakeWorld {
  const world = new FakeWorld(makeApp({ image: V1, analysis }));
  world.runToRest();
  assert.equal(world.app.status?.phase, "Healthy");
  return world;
}

describe("a test with a mirror and an A/B phase", () => {
  test("mirrored twice, then A/B once, then 30 % and 60 %, then promoted; each one interval", () => {
    const world = deployed(PHASES);
    world.setImage(V2);
    world.runToRest();
    assert.equal(world.app.status?.primaryImage, V2);
    const routes = world.routeLog.map((r) => r.weights);
    const match = [normalRule(RULE)];
    assert.deepEqual(routes, [
      { primary: 100, secondary: 0 },
      { primary: 100, secondary: 0, mirror: 20 },
      { primary: 100, secondary: 0, match },
      { primary: 70, secondary: 30 },
      { primary: 40, secondary: 60 },
      { primary: 100, secondary: 0 },
    ]);
    // The two mirror steps are one route: the second is a step of its own, judged one interval after the first.
    const mirrorSteps = world.steps.filter(
      (s) => s.plan.weights.mirror === 20 && s.plan.status.canary?.stage === "Stepping",
    );
    assert.deepEqual([...new Set(mirrorSteps.map((s) => s.plan.status.canary?.step))], [0, 1]);
    const times = world.routeLog.map((r) => r.time);
    assert.equal((times[2] ?? 0) - (times[1] ?? 0), 60, "two mirror steps of one interval each");
    assert.equal((times[3] ?? 0) - (times[2] ?? 0), 30, "one A/B step");
  });

  test("the status shows the phase: the mirror's share, or that matching requests go to the secondary", () => {
    const world = deployed(PHASES);
    world.setImage(V2);
    world.runToRest();
    const seen = new Set(world.steps.map((s) => JSON.stringify(s.plan.status.weights)));
    assert.ok(seen.has(JSON.stringify({ primary: 100, secondary: 0, mirror: 20 })), [...seen].join(" "));
    assert.ok(seen.has(JSON.stringify({ primary: 100, secondary: 0, match: true })), [...seen].join(" "));
    const messages = world.steps.map((s) => s.plan.status.message ?? "");
    assert.ok(
      messages.some((m) => /step 1 of 5, 20% of traffic mirrored to the secondary \(its answers discarded/.test(m)),
    );
    assert.ok(
      messages.some((m) =>
        /step 3 of 5, the requests matching spec\.analysis\.match on the secondary \(A\/B\)/.test(m),
      ),
    );
    const events = world.steps.flatMap((s) => s.plan.events.map((e) => e.message));
    assert.ok(
      events.some((m) => m.startsWith("mirrored 20% of traffic to the secondary, its answers discarded")),
      events.join("\n"),
    );
    assert.ok(events.some((m) => m.startsWith("sent the requests matching spec.analysis.match to the secondary")));
  });

  test("A/B only (weighted: false): promoted after the A/B phase; no weighted step ever", () => {
    const world = deployed({ interval: "30s", match: { rules: [RULE], iterations: 3 }, weighted: false });
    world.setImage(V2);
    world.runToRest();
    assert.equal(world.app.status?.primaryImage, V2);
    assert.ok(
      world.routeLog.every((r) => r.weights.secondary === 0),
      JSON.stringify(world.routeLog),
    );
    assert.ok(world.routeLog.some((r) => r.weights.match !== undefined));
  });

  test("a failed analysis in the mirror phase rolls back before any user got an answer from the secondary", () => {
    const world = deployed(PHASES);
    world.analyst = (checks, w) =>
      allPass(checks, w).map((r) => ({ ...r, value: 0, passed: false, reason: "too many errors" }));
    world.setImage(V2);
    world.runToRest();
    assert.equal(world.app.status?.failedImages?.[0]?.image, V2);
    assert.ok(
      world.routeLog.every((r) => r.weights.secondary === 0 && r.weights.match === undefined),
      JSON.stringify(world.routeLog),
    );
    assert.deepEqual(world.route, { primary: 100, secondary: 0 }, "the mirror is gone with the test");
  });

  test("a mirror the route does not carry yet is not routed: the step's clock waits for it", () => {
    const world = deployed(PHASES);
    world.quirks.staleRoute = true;
    world.setImage(V2);
    world.runUntil(world.time + 300);
    const canary = world.app.status?.canary;
    assert.equal(canary?.step, 0);
    assert.equal(canary?.stepRoutedAt, undefined, "the route still has no mirror");
  });
});

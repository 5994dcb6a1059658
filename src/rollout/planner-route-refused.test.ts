/**
 * A route the API server keeps refusing: the step it should carry is held, and rolls back `RouteRefused`
 * once it has waited the progress deadline (paused time excluded), traffic first.
 */
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import type { CanaryAppStatus, Condition } from "../api/types.js";
import { ANNOTATIONS } from "../api/types.js";
import {
  V1,
  V2,
  afterPersist,
  condition,
  deployment,
  iso,
  makeApp,
  reasons,
  routed,
  runPlan,
  testing,
  type Scenario,
} from "./fixtures.test-helpers.js";
import { FakeWorld } from "./fake-world.test-helpers.js";
import { CHILDREN_APPLIED } from "./conditions.js";

const REFUSAL =
  'VirtualService shop/web: apply: admission webhook "weights.policy.example" denied the request: canary weight above 20 (HTTP 400)';

/** ChildrenApplied as the reconciler records a refused apply (reported.ts: childrenApplied). */
const refused = (since: number, message = REFUSAL): Condition => ({
  type: CHILDREN_APPLIED,
  status: "False",
  reason: "Rejected",
  message,
  lastTransitionTime: iso(since),
});

/** Step 3 (30 %) decided at 100 s; the route still carries step 2's 20 %, its write refused since. */
function held(now: number, extra: Partial<CanaryAppStatus> = {}): Scenario {
  return {
    image: V2,
    status: testing(
      { stage: "Stepping", step: 2, stepStartedAt: iso(100), stepBeganAt: iso(100), stepRoutedAt: undefined },
      { conditions: [refused(100)], ...extra },
    ),
    observed: { secondary: deployment(V2), routedWeights: routed(20) },
    now,
  };
}

describe("a route the API server refuses", () => {
  test("holds the step until the progress deadline, and looks again then (not every second)", () => {
    const p = runPlan(held(650));
    assert.equal(p.status.canary?.stage, "Stepping");
    assert.equal(p.status.canary?.step, 2);
    assert.equal(p.requeueAfterSeconds, 50, "the deadline is what time makes due");
    assert.match(p.status.message ?? "", /denied the request: canary weight above 20/);
  });

  test("after the progress deadline: rolled back RouteRefused with the API server's message, traffic first", () => {
    const p = runPlan(held(700));
    assert.equal(p.status.canary?.stage, "RollingBack");
    assert.equal(p.status.canary?.outcome?.reason, "RouteRefused");
    assert.match(p.status.canary?.outcome?.message ?? "", /step 3 of 5/);
    assert.match(p.status.canary?.outcome?.message ?? "", /600s/);
    assert.ok(p.status.canary?.outcome?.message.endsWith(REFUSAL));
    assert.equal(p.status.failedImages?.[0]?.reason, "RouteRefused");
    assert.deepEqual(p.weights, { primary: 100, secondary: 0 }, "the route is asked for the primary's 100 first");
    assert.notEqual(p.secondary, null, "the secondary stays until the route shows it drained");
    assert.deepEqual(reasons(p), ["RollingBack"]);
  });

  test("rolling back while the route is still refused: the plan asks the secondary's Service to select the primary's pods", () => {
    const rolling = afterPersist(held(700), runPlan(held(700)));
    const p = runPlan({ ...rolling, now: 702 });
    assert.equal(p.status.canary?.stage, "RollingBack");
    assert.equal(p.secondaryServiceSelects, "primary", "the route still gives the secondary 20 %");
    assert.deepEqual(p.weights, { primary: 100, secondary: 0 });
    assert.notEqual(p.secondary, null, "its pods stay until the route shows them drained");
    assert.match(p.status.message ?? "", /refused: VirtualService shop\/web: apply: admission webhook .*(HTTP 400)/);
    assert.match(p.status.message ?? "", /The route still cannot be written and gives the secondary a share/);

    const written: Scenario = {
      ...rolling,
      status: { ...rolling.status, conditions: [] },
      observed: { secondary: deployment(V2), routedWeights: routed(0) },
      now: 704,
    };
    const drained = runPlan(written);
    assert.equal(drained.secondaryServiceSelects, undefined, "the route is written: each Service its own track");
  });

  test("a secondary never available while an apply is refused: the deadline says why", () => {
    const p = runPlan({
      image: V2,
      status: testing(
        { stage: "WaitingForSecondary", step: -1, stepStartedAt: iso(0) },
        { conditions: [refused(0, "Service shop/web-secondary: apply: denied (HTTP 422)")] },
      ),
      observed: { secondary: null },
      now: 600,
    });
    assert.match(
      p.status.failedImages?.[0]?.message ?? "",
      /^the secondary did not become available with .* within 600s; a child could not be applied: Service shop\/web-secondary: apply: denied \(HTTP 422\)$/,
    );
  });

  test("an apply refused while the route carries the step (a child after it) holds nothing", () => {
    const s = held(700);
    s.status = testing(
      { stage: "Stepping", step: 2, stepStartedAt: iso(690), stepBeganAt: iso(100), stepRoutedAt: iso(101) },
      { conditions: [refused(100, "Deployment shop/web-secondary: apply: spec.template: Invalid value (HTTP 422)")] },
    );
    s.observed = { secondary: deployment(V2), routedWeights: routed(30) };
    const p = runPlan(s);
    assert.equal(p.status.canary?.stage, "Stepping");
  });

  test("no refusal on record: a step not yet on the route is not rolled back", () => {
    const s = held(700);
    s.status = { ...s.status, conditions: [] };
    assert.equal(runPlan(s).status.canary?.stage, "Stepping");
  });

  test("time paused does not count toward it", () => {
    const pause: Scenario = { ...held(600), annotations: { [ANNOTATIONS.paused]: "true" } };
    const pausedPlan = runPlan(pause);
    const resumedAt: Scenario = { ...afterPersist(pause, pausedPlan), annotations: {}, now: 600 + 3600 };
    const resumed = runPlan(resumedAt);
    assert.equal(resumed.status.canary?.stage, "Stepping");
    const before = runPlan({ ...afterPersist(resumedAt, resumed), now: 700 + 3600 - 1 });
    assert.equal(before.status.canary?.stage, "Stepping", "599 s not paused");
    const due = runPlan({ ...afterPersist(resumedAt, resumed), now: 700 + 3600 });
    assert.equal(due.status.canary?.outcome?.reason, "RouteRefused", "600 s not paused");
  });

  test("the Ready condition is not claimed for it while the primary is available", () => {
    const p = runPlan(held(650));
    assert.equal(condition(p, "Ready")?.status, "True");
    assert.equal(condition(p, CHILDREN_APPLIED)?.status, "False", "the reconciler's record is kept");
  });
});

/*
 * The planner driving a world whose API server refuses the route's write (FakeWorld's `refuseRoute`): the
 * refusal is recorded in ChildrenApplied after each apply, and the requeue each plan asks for is followed.
 */
describe("simulation: an admission policy on the route", () => {
  function deployed(): FakeWorld {
    const world = new FakeWorld(makeApp({ image: V1 }));
    world.runToRest();
    assert.equal(world.app.status?.phase, "Healthy");
    return world;
  }

  test("refusing more than 20 %: held at step 3 for the deadline, rolled back, the route never above 20 %", () => {
    const world = deployed();
    world.quirks.refuseRoute = (w) => (w.secondary > 20 ? REFUSAL : undefined);
    world.setImage(V2);
    world.runToRest();
    assert.equal(world.app.status?.canary, undefined);
    assert.equal(world.app.status?.failedImages?.[0]?.reason, "RouteRefused");
    assert.ok(
      world.routeLog.every((r) => r.weights.secondary <= 20),
      JSON.stringify(world.routeLog),
    );
    assert.deepEqual(world.route, { primary: 100, secondary: 0 }, "the rollback's 100/0 is taken");
    assert.equal(world.secondary, null);
    const decided = world.steps.find((s) => s.plan.status.canary?.step === 2);
    const rolled = world.steps.find((s) => s.plan.status.canary?.stage === "RollingBack");
    assert.ok(decided !== undefined && rolled !== undefined);
    assert.equal(rolled.time - decided.time, 600, "the progress deadline from the step's decision");
    const between = world.steps.filter((s) => s.time > decided.time && s.time < rolled.time);
    assert.ok(between.length <= 2, `${between.length} reconciles while held: the deadline is the requeue`);
    assert.equal(world.app.status?.conditions?.find((c) => c.type === CHILDREN_APPLIED)?.status, "True");
  });

  test("refusing every change once at 10 %: the rollback cannot write the route either; it ends once it can", () => {
    const world = deployed();
    const stuck = 'VirtualService shop/web: apply: admission webhook "freeze.example" denied the request (HTTP 403)';
    world.quirks.refuseRoute = (_w, w) => (w.route?.secondary === 10 ? stuck : undefined);
    world.setImage(V2);
    world.runUntil(world.time + 3600);
    const last = world.steps.at(-1)?.plan;
    assert.equal(last?.status.canary?.stage, "RollingBack");
    assert.equal(last?.status.canary?.outcome?.reason, "RouteRefused");
    assert.deepEqual(world.route, { primary: 90, secondary: 10 }, "the route is as the policy froze it");
    assert.equal(last?.secondaryServiceSelects, "primary", "its share is asked to land on the primary's pods");
    assert.notEqual(world.secondary, null, "the secondary's pods stay until the route shows them drained");
    assert.equal(last?.requeueAfterSeconds, 30, "once an interval, not a refused write every 2 s");

    world.quirks.refuseRoute = undefined;
    world.runToRest();
    assert.equal(world.app.status?.canary, undefined);
    assert.deepEqual(world.route, { primary: 100, secondary: 0 });
    assert.equal(world.secondary, null);
    assert.equal(world.steps.at(-1)?.plan.secondaryServiceSelects, undefined);
  });
});

/*
 * A route the API server takes but its implementation does not carry (the Gateway API: a parent does not
 * accept it, a backend is not resolved, nothing reports on it): the same hold and the same deadline.
 */
describe("a route its implementation does not carry", () => {
  const NOT_ACCEPTED = {
    reason: "RouteNotAccepted",
    message:
      "HTTPRoute web: parent Gateway istio-system/public: Accepted False (NotAllowedByListeners: no listener allows routes from namespace shop)",
  };

  function notCarried(now: number): Scenario {
    return {
      image: V2,
      status: testing({
        stage: "Stepping",
        step: 2,
        stepStartedAt: iso(100),
        stepBeganAt: iso(100),
        stepRoutedAt: undefined,
      }),
      // Its weights read as null: a split the data plane does not have is not routed.
      observed: { secondary: deployment(V2), routedWeights: null, routeNotCarried: NOT_ACCEPTED },
      now,
    };
  }

  test("holds the step, saying the implementation's reason, until the progress deadline", () => {
    const p = runPlan(notCarried(650));
    assert.equal(p.status.canary?.stage, "Stepping");
    assert.equal(p.status.canary?.step, 2);
    assert.equal(p.requeueAfterSeconds, 50, "the deadline is what time makes due; the route's status is watched");
    assert.match(
      p.status.message ?? "",
      /waits for the route's implementation to carry it \(RouteNotAccepted: .*NotAllowedByListeners/,
    );
  });

  test("after the deadline: rolled back RouteRefused with the implementation's reason", () => {
    const p = runPlan(notCarried(700));
    assert.equal(p.status.canary?.stage, "RollingBack");
    assert.equal(p.status.canary?.outcome?.reason, "RouteRefused");
    assert.match(
      p.status.canary?.outcome?.message ?? "",
      /^the route has not carried the weight of step 3 of 5 for 600s; its implementation does not carry it: RouteNotAccepted: HTTPRoute web: parent Gateway istio-system\/public: Accepted False/,
    );
    assert.deepEqual(p.weights, { primary: 100, secondary: 0 });
    assert.notEqual(p.secondary, null, "the secondary stays until the route shows it drained");
  });

  test("carried again before the deadline: the step goes on", () => {
    const s = notCarried(700);
    s.observed = { secondary: deployment(V2), routedWeights: routed(30) };
    assert.equal(runPlan(s).status.canary?.stage, "Stepping");
  });

  test("RouteAccepted says it: False with the implementation's reason, True once carried, absent for Istio", () => {
    const held = runPlan(notCarried(650));
    assert.deepEqual(
      [condition(held, "RouteAccepted")?.status, condition(held, "RouteAccepted")?.reason],
      ["False", "RouteNotAccepted"],
    );
    assert.match(condition(held, "RouteAccepted")?.message ?? "", /NotAllowedByListeners/);
    const carried = notCarried(660);
    carried.status = held.status;
    carried.observed = { secondary: deployment(V2), routedWeights: routed(30), routeCarried: true };
    const ok = runPlan(carried);
    assert.deepEqual(
      [condition(ok, "RouteAccepted")?.status, condition(ok, "RouteAccepted")?.reason],
      ["True", "Accepted"],
    );
    const istio = notCarried(670);
    istio.status = ok.status;
    istio.observed = { secondary: deployment(V2), routedWeights: routed(30) };
    assert.equal(condition(runPlan(istio), "RouteAccepted"), undefined, "a router that reports nothing has none");
  });
});

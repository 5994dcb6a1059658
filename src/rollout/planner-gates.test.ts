/**
 * The gate webhooks in the planner: confirm-rollout and pre-rollout before the first step, confirm-promotion
 * before promotion. The planner asks for a gate (startPlan says `analysisDue` with the gate's webhooks as
 * checks), and moves on, holds, or rolls back on what they answered.
 */
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import type { MetricResult, WebhookSpec } from "../api/types.js";
import type { Scenario } from "./fixtures.test-helpers.js";
import {
  afterPersist,
  at,
  condition,
  deployment,
  evidence,
  iso,
  makeApp,
  passing,
  reasons,
  routed,
  runPlan,
  testing,
  V1,
  V2,
} from "./fixtures.test-helpers.js";
import { startPlan } from "./planner.js";
import type { Plan } from "./types.js";

const hook = (type: WebhookSpec["type"], name: string = type): WebhookSpec => ({
  name,
  type,
  url: `http://hooks.svc/${name}`,
});

const answered = (name: string, status: number): MetricResult => ({
  name,
  kind: "webhook",
  value: status,
  passed: status >= 200 && status < 300,
  reason: status >= 200 && status < 300 ? "WebhookAnswered" : "WebhookRejected",
  message: `answered ${status}`,
  query: `http://hooks.svc/${name}`,
});

/** Plans `s` the way the reconciler does: the gate or analysis asked for is answered with `results`. */
function reconcile(s: Scenario, results?: MetricResult[]): { plan: Plan; asked: string[] | undefined } {
  const app = makeApp(s);
  const planning = startPlan({
    app,
    observed: { primary: deployment(V1, true, 3), secondary: null, routedWeights: routed(0), ...s.observed },
    now: at(s.now ?? 0),
  });
  assert.notEqual(planning.kind, "invalid");
  if (planning.kind === "ready") return { plan: planning.plan, asked: undefined };
  if (planning.kind !== "analysisDue") throw new Error("unreachable");
  const asked = planning.checks.map((c) => `${c.webhook?.type ?? c.mode}:${c.name}`);
  if (results === undefined) return { plan: runPlan(s), asked };
  return { plan: planning.complete(results), asked };
}

const READY = { secondary: deployment(V2) };

describe("gates before the first step", () => {
  const analysis = { webhooks: [hook("confirm-rollout", "approve"), hook("pre-rollout", "migrate")] };
  const waiting: Scenario = {
    analysis,
    status: testing({ stage: "WaitingForSecondary", step: -1 }),
    observed: READY,
    now: 3,
  };

  test("a ready secondary takes no traffic before confirm-rollout is asked", () => {
    const { asked } = reconcile(waiting);
    assert.deepEqual(asked, ["confirm-rollout:approve"]);
  });

  test("confirm-rollout not answering 2xx holds the test, with the webhook named in the condition", () => {
    const { plan } = reconcile(waiting, [answered("approve", 503)]);
    assert.equal(plan.status.canary?.stage, "WaitingForSecondary");
    assert.equal(plan.weights.secondary, 0);
    assert.deepEqual(plan.status.canary?.gates?.waiting, {
      type: "confirm-rollout",
      name: "approve",
      message: "approve answered 503",
      since: iso(3),
      checkedAt: iso(3),
    });
    const progressing = condition(plan, "Progressing");
    assert.equal(progressing?.reason, "WaitingForWebhook");
    assert.match(progressing?.message ?? "", /confirm-rollout webhook approve: approve answered 503/);
    assert.deepEqual(reasons(plan), ["WaitingForWebhook"]);
    assert.equal(plan.requeueAfterSeconds, 30, "asked again one interval (30s by default) later");
  });

  test("a held gate is asked again only once the interval passed", () => {
    const held = afterPersist(waiting, reconcile(waiting, [answered("approve", 503)]).plan);
    assert.equal(reconcile({ ...held, now: 20 }).asked, undefined);
    assert.deepEqual(reconcile({ ...held, now: 33 }).asked, ["confirm-rollout:approve"]);
    const again = reconcile({ ...held, now: 33 }, [answered("approve", 503)]).plan;
    assert.deepEqual(reasons(again), [], "the wait is said once");
    assert.equal(again.status.canary?.gates?.waiting?.since, iso(3));
  });

  test("confirm-rollout answering 200, then pre-rollout answering 200, starts the first step", () => {
    const confirmed = reconcile(waiting, [answered("approve", 200)]).plan;
    assert.deepEqual(confirmed.status.canary?.gates, { passed: ["confirm-rollout"] });
    assert.equal(confirmed.weights.secondary, 0);
    const next = afterPersist(waiting, confirmed);
    assert.deepEqual(reconcile(next).asked, ["pre-rollout:migrate"]);
    const started = reconcile(next, [answered("migrate", 204)]).plan;
    assert.equal(started.status.canary?.stage, "Stepping");
    assert.equal(started.weights.secondary, 10);
    assert.deepEqual(reasons(started), ["GatePassed", "StepAdvanced"]);
  });

  test("confirm-rollout is asked before the secondary runs, which starts only once it answered 200", () => {
    const fresh: Scenario = { ...waiting, observed: { secondary: null } };
    assert.deepEqual(reconcile(fresh).asked, ["confirm-rollout:approve"]);
    const held = reconcile(fresh, [answered("approve", 503)]).plan;
    assert.equal(held.secondary, null, "no secondary Deployment while confirm-rollout holds");
    assert.equal(held.status.canary?.gates?.waiting?.type, "confirm-rollout");
    assert.equal(condition(held, "Progressing")?.reason, "WaitingForWebhook");
    assert.equal(held.requeueAfterSeconds, 30, "only the gate's recheck is due");
    // Held for longer than the progress deadline: nothing rolls back, nothing started.
    const later = afterPersist(fresh, held);
    const stillHeld = reconcile({ ...later, now: 3 + 700 }, [answered("approve", 503)]).plan;
    assert.equal(stillHeld.status.canary?.stage, "WaitingForSecondary");
    assert.equal(stillHeld.secondary, null);
    assert.equal(stillHeld.requeueAfterSeconds, 30);
    const confirmed = reconcile({ ...later, now: 3 + 700 }, [answered("approve", 200)]).plan;
    assert.deepEqual(confirmed.status.canary?.gates, { passed: ["confirm-rollout"] });
    assert.equal(confirmed.secondary?.image, V2, "the secondary starts once confirm-rollout answered 2xx");
    assert.equal(confirmed.status.canary?.stepStartedAt, iso(3 + 700), "its progress deadline counts from now");
    assert.equal(confirmed.weights.secondary, 0);
    // pre-rollout is asked only once the secondary is ready.
    const starting = afterPersist(later, confirmed);
    assert.equal(reconcile({ ...starting, now: 3 + 705 }).asked, undefined);
    assert.deepEqual(reconcile({ ...starting, observed: READY, now: 3 + 705 }).asked, ["pre-rollout:migrate"]);
  });

  test("pre-rollout failing rolls back before any traffic, recorded with the webhook and its answer", () => {
    const confirmed = afterPersist(waiting, reconcile(waiting, [answered("approve", 200)]).plan);
    const failed = reconcile(confirmed, [answered("migrate", 500)]).plan;
    // The secondary never had traffic: nothing to drain, the test ends at once.
    assert.equal(failed.status.canary, undefined);
    assert.equal(failed.weights.secondary, 0);
    assert.deepEqual(reasons(failed), ["RollingBack", "RolledBack"]);
    assert.equal(condition(failed, "Progressing")?.reason, "RolledBack");
    const record = failed.status.failedImages?.[0];
    assert.equal(record?.reason, "PreRolloutFailed");
    assert.equal(record?.metric, "migrate");
    assert.equal(record?.value, 500);
    assert.equal(record?.query, "http://hooks.svc/migrate");
  });

  test("a paused test asks no gate", () => {
    const paused: Scenario = {
      ...waiting,
      annotations: { "canaryapp.io/paused": "true" },
      status: testing({ stage: "WaitingForSecondary", step: -1, pausedAt: iso(1) }),
    };
    assert.equal(reconcile(paused).asked, undefined);
  });
});

describe("the confirm-promotion gate", () => {
  const analysis = { stepWeights: [50], webhooks: [hook("confirm-promotion", "cab")] };
  const lastStep: Scenario = {
    analysis,
    status: testing({ stage: "Stepping", step: 0, stepStartedAt: iso(0) }, { weights: { primary: 50, secondary: 50 } }),
    observed: { ...READY, routedWeights: routed(50) },
    now: 31,
  };

  test("the last step passing waits at the gate instead of promoting", () => {
    const { plan, asked } = reconcile(lastStep, [evidence(), passing()]);
    assert.deepEqual(asked, ["traffic:secondary-traffic", "threshold:request-success-rate"], "the step's analysis");
    assert.equal(plan.status.canary?.stage, "AwaitingPromotion");
    assert.match(plan.events.find((e) => e.reason === "AwaitingPromotion")?.message ?? "", /confirm-promotion/);
  });

  test("held until the webhook answers 200, then promoted", () => {
    const awaiting = afterPersist(lastStep, reconcile(lastStep, [evidence(), passing()]).plan);
    assert.deepEqual(reconcile(awaiting).asked, ["confirm-promotion:cab"]);
    const held = reconcile(awaiting, [answered("cab", 409)]).plan;
    assert.equal(held.status.canary?.stage, "AwaitingPromotion");
    assert.equal(condition(held, "Progressing")?.reason, "WaitingForWebhook");
    assert.match(held.status.message ?? "", /confirm-promotion webhook cab/);
    const later = { ...afterPersist(awaiting, held), now: 62 };
    assert.deepEqual(reconcile(later).asked, ["confirm-promotion:cab"]);
    const promoted = reconcile(later, [answered("cab", 200)]).plan;
    assert.equal(promoted.status.canary?.stage, "Promoting");
    assert.equal(promoted.primary.image, V2);
  });

  test("the promote annotation is a person's decision: it does not wait for the gate", () => {
    const awaiting = afterPersist(lastStep, reconcile(lastStep, [evidence(), passing()]).plan);
    const { plan, asked } = reconcile({ ...awaiting, annotations: { "canaryapp.io/promote": "now" } });
    assert.equal(asked, undefined);
    assert.equal(plan.status.canary?.stage, "Promoting");
  });
});

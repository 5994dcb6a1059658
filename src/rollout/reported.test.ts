import assert from "node:assert/strict";
import { describe, test } from "node:test";
import type { CanaryAppStatus } from "../api/types.js";
import { at, deployment, makeApp, observation, planInput, V1 } from "./fixtures.test-helpers.js";
import { plan } from "./planner.js";
import { applyRefusal, childrenApplied, primaryCreated, statusEqual } from "./reported.js";

const REJECTION =
  'Deployment shop/web-primary: apply: Deployment.apps "web-primary" is invalid: spec.selector: Invalid value: ... field is immutable';

const ready = (status: CanaryAppStatus) => status.conditions?.find((c) => c.type === "Ready");

describe("a rejected child", () => {
  const first = () =>
    plan(planInput(makeApp({ image: V1 }), observation({ primary: null, routedWeights: null }), at(0)));

  test("Ready says the child was rejected and why, not that the primary does not exist yet", () => {
    const planned = first().status;
    assert.equal(ready(planned)?.reason, "PrimaryMissing", "before the apply, the primary is only missing");
    const status = childrenApplied(planned, REJECTION, at(0));
    assert.equal(ready(status)?.status, "False");
    assert.equal(ready(status)?.reason, "ChildRejected");
    assert.doesNotMatch(ready(status)?.message ?? "", /does not exist/);
    assert.match(ready(status)?.message ?? "", /could not be applied: Deployment shop\/web-primary.*immutable/);
    assert.match(status.message ?? "", /could not be applied.*immutable/);
  });

  test("the next plan keeps what the rejection said: no status write while nothing changes", () => {
    const status = childrenApplied(first().status, REJECTION, at(0));
    const again = plan(
      planInput(makeApp({ image: V1, status }), observation({ primary: null, routedWeights: null }), at(5)),
    );
    assert.ok(statusEqual(again.status, status), JSON.stringify(again.status.conditions));
    assert.ok(statusEqual(childrenApplied(again.status, REJECTION, at(5)), status));
  });

  test("once the children apply, Ready tells the primary's state again", () => {
    const rejected = childrenApplied(first().status, REJECTION, at(0));
    const applied = childrenApplied(rejected, undefined, at(5));
    const next = plan(
      planInput(makeApp({ image: V1, status: applied }), observation({ primary: deployment(V1, true, 3) }), at(6)),
    );
    assert.equal(ready(next.status)?.reason, "PrimaryAvailable");
    assert.doesNotMatch(next.status.message ?? "", /rejected/);
  });

  test("an available primary stays Ready while another child is rejected", () => {
    const planned = plan(planInput(makeApp({ image: V1, status: first().status }), observation(), at(1))).status;
    const status = childrenApplied(planned, "VirtualService shop/web: apply: invalid", at(1));
    assert.equal(ready(status)?.reason, "PrimaryAvailable");
  });
});

describe("the primary created by this reconcile", () => {
  const first = () =>
    plan(planInput(makeApp({ image: V1 }), observation({ primary: null, routedWeights: null }), at(0)));
  const created = deployment(V1, false, 0);

  test("Ready says what the next plan will see, so that plan writes nothing", () => {
    const status = primaryCreated(first().status, created, 1, at(0));
    assert.equal(ready(status)?.reason, "PrimaryNotAvailable");
    assert.equal(ready(status)?.lastTransitionTime, ready(first().status)?.lastTransitionTime, "still False");
    const next = plan(planInput(makeApp({ image: V1, status }), observation({ primary: created }), at(1)));
    assert.ok(statusEqual(next.status, status), JSON.stringify(next.status.conditions));
    assert.deepEqual(next.events, []);
  });

  test("without it the next plan had a status write of its own (what this saves)", () => {
    const planned = first().status;
    const next = plan(planInput(makeApp({ image: V1, status: planned }), observation({ primary: created }), at(1)));
    assert.ok(!statusEqual(next.status, planned));
  });

  test("nothing changes when the primary was not created, or Ready says something else", () => {
    const planned = first().status;
    assert.equal(primaryCreated(planned, null, 1, at(0)), planned);
    const rejected = childrenApplied(planned, REJECTION, at(0));
    assert.equal(primaryCreated(rejected, created, 1, at(0)), rejected, "a rejection stays on Ready");
  });
});

describe("applyRefusal: the planner's view of a refused apply", () => {
  const refusedOnce = childrenApplied({}, REJECTION, at(0));
  const cases: { name: string; status: CanaryAppStatus; want: string | undefined }[] = [
    { name: "never refused: nothing", status: {}, want: undefined },
    { name: "refused: the API server's message", status: refusedOnce, want: REJECTION },
    { name: "applied again since: nothing", status: childrenApplied(refusedOnce, undefined, at(1)), want: undefined },
  ];
  for (const c of cases) test(c.name, () => assert.equal(applyRefusal(c.status.conditions), c.want));
});

import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { CONDITION } from "../api/types.js";
import { analysisDue } from "./planner.js";
import {
  afterPersist,
  condition,
  deployment,
  passing,
  reasons,
  runPlan,
  scenarioInput,
  testing,
  V1,
  V2,
  type Scenario,
} from "./fixtures.test-helpers.js";

const refused = { reason: "CredentialsRefused", message: "spec.prometheus.secretRef prom: not labelled" };

describe("a refused Prometheus (credentials or URL)", () => {
  test("no test starts: traffic stays on the primary, nothing is recorded against the image", () => {
    const s: Scenario = { image: V2, status: { primaryImage: V1 }, observed: { analysisRefused: refused } };
    const p = runPlan(s);
    assert.equal(p.secondary, null);
    assert.deepEqual(p.status.weights, { primary: 100, secondary: 0 });
    assert.equal(p.status.canary, undefined);
    assert.equal(p.status.failedImages, undefined);
    assert.equal(p.status.phase, "Invalid");
    const invalid = condition(p, CONDITION.InvalidSpec);
    assert.equal(invalid?.status, "True");
    assert.equal(invalid?.reason, "CredentialsRefused");
    assert.equal(invalid?.message, refused.message);
    assert.deepEqual(reasons(p), ["CredentialsRefused"]);
    assert.ok(p.events[0]?.type === "Warning" && p.events[0].message === refused.message);
  });

  test("the Warning is said once; a replay of the persisted plan says nothing new", () => {
    const s: Scenario = { image: V2, status: { primaryImage: V1 }, observed: { analysisRefused: refused } };
    const again = runPlan(afterPersist(s, runPlan(s)));
    assert.deepEqual(reasons(again), []);
    const changed = runPlan({
      ...afterPersist(s, runPlan(s)),
      observed: { analysisRefused: { reason: "PrometheusURLNotAllowed", message: "spec.prometheusURL x" } },
    });
    assert.deepEqual(reasons(changed), ["PrometheusURLNotAllowed"]);
  });

  test("mid-test, no analysis is due and no step is taken, so the image is not judged", () => {
    const s: Scenario = {
      image: V2,
      status: testing({ stage: "Stepping", step: 0 }),
      observed: { secondary: deployment(V2), analysisRefused: refused },
      now: 3600,
    };
    assert.equal(analysisDue(scenarioInput(s)), false);
    const p = runPlan({ ...s, observed: { ...s.observed, analysis: [passing()] } });
    assert.equal(p.status.canary?.step, 0);
    assert.equal(p.status.canary?.failedChecks, 0);
    assert.equal(p.status.failedImages, undefined);
    assert.equal(analysisDue(scenarioInput({ ...s, observed: { secondary: deployment(V2) } })), true);
  });

  test("once accepted again, the test starts", () => {
    const s: Scenario = { image: V2, status: { primaryImage: V1 }, observed: { analysisRefused: refused } };
    const fixed = runPlan({ ...afterPersist(s, runPlan(s)), observed: {} });
    assert.ok(fixed.status.canary !== undefined);
    assert.equal(condition(fixed, CONDITION.InvalidSpec)?.status, "False");
  });
});

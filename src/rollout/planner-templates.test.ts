/**
 * Analysis templates in the planner (ADR 0031): a test records its templates' metrics when it starts and is
 * judged by them to its end; an app whose templates do not resolve starts no test, and says why once.
 */
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import type { AnalysisSpec, PinnedTemplate } from "../api/types.js";
import type { TemplateResolution } from "../analysis/template-resolution.js";
import type { Scenario } from "./fixtures.test-helpers.js";
import {
  afterPersist,
  at,
  condition,
  deployment,
  makeApp,
  reasons,
  routed,
  testing,
  V1,
  V2,
} from "./fixtures.test-helpers.js";
import { startPlan } from "./planner.js";
import type { Plan } from "./types.js";

const ANALYSIS: AnalysisSpec = { templates: [{ name: "slo", kind: "ClusterCanaryAnalysisTemplate" }] };

function pinned(query: string, resourceVersion = "1"): PinnedTemplate {
  return {
    kind: "ClusterCanaryAnalysisTemplate",
    name: "slo",
    resourceVersion,
    metrics: [{ name: "errors", query, max: 1, template: "ClusterCanaryAnalysisTemplate/slo" }],
  };
}

const resolved = (query: string, resourceVersion = "1"): TemplateResolution => ({
  kind: "resolved",
  templates: [pinned(query, resourceVersion)],
});
const MISSING: TemplateResolution = {
  kind: "problem",
  reason: "TemplateNotFound",
  message: "ClusterCanaryAnalysisTemplate/slo does not exist",
};

/** startPlan as the reconciler calls it; `checks` are the queries of an analysis it asks for. */
function reconcile(s: Scenario): { plan: Plan; checks: string[] | undefined } {
  const planning = startPlan({
    app: makeApp(s),
    observed: { primary: deployment(V1, true, 3), secondary: null, routedWeights: routed(0), ...s.observed },
    now: at(s.now ?? 0),
  });
  if (planning.kind === "invalid") throw new Error("unexpected invalid plan");
  if (planning.kind === "ready") return { plan: planning.plan, checks: undefined };
  return { plan: planning.complete([]), checks: planning.checks.map((c) => `${c.name}:${c.query}`) };
}

describe("a test's templates", () => {
  test("a new image starts a test that records the templates' metrics as they resolve now", () => {
    const { plan } = reconcile({
      analysis: ANALYSIS,
      status: { primaryImage: V1 },
      observed: { analysisTemplates: resolved("q1") },
    });
    assert.equal(plan.status.canary?.image, V2);
    assert.deepEqual(plan.status.canary?.analysisTemplates, [pinned("q1")]);
    assert.equal(condition(plan, "AnalysisReady")?.status, "True");
    assert.equal(condition(plan, "AnalysisReady")?.reason, "TemplatesResolved");
  });

  test("a missing template: no test starts; AnalysisReady and InvalidSpec say why, and a Warning Event once", () => {
    const s: Scenario = { analysis: ANALYSIS, status: { primaryImage: V1 }, observed: { analysisTemplates: MISSING } };
    const { plan } = reconcile(s);
    assert.equal(plan.status.canary, undefined);
    assert.equal(plan.secondary, null);
    const ready = condition(plan, "AnalysisReady");
    assert.equal(ready?.status, "False");
    assert.equal(ready?.reason, "TemplateNotFound");
    assert.match(ready?.message ?? "", /slo does not exist; no test starts until they resolve/);
    assert.equal(condition(plan, "InvalidSpec")?.reason, "TemplateNotFound");
    assert.deepEqual(reasons(plan), ["TemplateNotFound"]);
    const again = reconcile(afterPersist(s, plan));
    assert.deepEqual(reasons(again.plan), [], "said once");
    assert.equal(again.plan.status.canary, undefined);
    // The template appears: the test starts.
    const later = reconcile({ ...afterPersist(s, plan), observed: { analysisTemplates: resolved("q1") } });
    assert.deepEqual(later.plan.status.canary?.analysisTemplates, [pinned("q1")]);
    assert.equal(condition(later.plan, "InvalidSpec")?.status, "False");
  });

  test("a running test is judged by its recorded metrics, not the template as it is now", () => {
    const { plan, checks } = reconcile({
      analysis: ANALYSIS,
      status: testing({ analysisTemplates: [pinned("q1")] }),
      observed: { secondary: deployment(V2), routedWeights: routed(10), analysisTemplates: resolved("q2", "2") },
      now: 30,
    });
    assert.ok(checks?.includes("errors:q1"), String(checks));
    assert.ok(!(checks ?? []).some((c) => c.includes("q2")));
    assert.deepEqual(plan.status.canary?.analysisTemplates, [pinned("q1")]);
  });

  test("a running test goes on with its recorded metrics when its template is removed", () => {
    const { plan, checks } = reconcile({
      analysis: ANALYSIS,
      status: testing({ analysisTemplates: [pinned("q1")] }),
      observed: { secondary: deployment(V2), routedWeights: routed(10), analysisTemplates: MISSING },
      now: 30,
    });
    assert.ok(checks?.includes("errors:q1"), String(checks));
    assert.equal(condition(plan, "InvalidSpec")?.status, "False");
    assert.match(condition(plan, "AnalysisReady")?.message ?? "", /the running test goes on/);
  });

  test("a test that began before its templates resolved records them at its first plan that resolves them", () => {
    const { plan } = reconcile({
      analysis: ANALYSIS,
      status: testing({}),
      observed: { secondary: deployment(V2), routedWeights: routed(10), analysisTemplates: resolved("q1") },
      now: 5,
    });
    assert.deepEqual(plan.status.canary?.analysisTemplates, [pinned("q1")]);
  });

  test("an app naming no template has no AnalysisReady condition", () => {
    const { plan } = reconcile({ status: { primaryImage: V1 } });
    assert.equal(condition(plan, "AnalysisReady"), undefined);
    assert.equal(plan.status.canary?.analysisTemplates, undefined);
  });
});

/**
 * A test's subject is the whole pod-template revision, and what is promoted is the digest its pods ran:
 * tables of plans over the fixtures' app (primary V1, spec V2 unless said otherwise).
 */
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import fc from "fast-check";
import type { CanaryAppStatus, EnvVar, PodTemplateParts } from "../api/types.js";
import {
  V1,
  V2,
  V3,
  deployment,
  evidence,
  failing,
  iso,
  passing,
  reasons,
  routed,
  runPlan,
  testing,
  type Scenario,
} from "./fixtures.test-helpers.js";
import { primaryRecord } from "./subject.js";
import type { PodObservation } from "./types.js";

const D1 = `sha256:${"1".repeat(64)}`;
const D2 = `sha256:${"2".repeat(64)}`;
const env = (value: string): EnvVar[] => [{ name: "FOO", value }];
const template = (value: string): PodTemplateParts => ({ imageListenPort: 8080, pod: { env: env(value) } });
const pods = (...list: [string, string][]): PodObservation[] =>
  list.map(([image, imageID]) => ({ image, imageID, ready: true }));

/** Healthy on V1 with FOO=1. */
const healthy: CanaryAppStatus = { primaryImage: V1, primary: primaryRecord(V1, template("1")), weights: routed(0) };

describe("every change to the pod is tested", () => {
  test("a pod.env change with the same image starts a test of the new template; the primary keeps its own", () => {
    const p = runPlan({ image: V1, spec: { pod: { env: env("2") } }, status: healthy });
    assert.deepEqual(reasons(p), ["TestStarted"]);
    assert.equal(p.status.canary?.image, V1);
    assert.equal(p.status.canary?.changes, "env FOO changed");
    assert.deepEqual(p.status.canary?.template, template("2"));
    assert.deepEqual(p.templates?.secondary, template("2"));
    assert.deepEqual(p.templates?.primary, template("1"));
    assert.deepEqual(p.primary, { image: V1, replicas: 3 });
    assert.deepEqual(p.weights, { primary: 100, secondary: 0 });
  });

  test("an image-only change keeps the seed's test: no template in status, the primary's template tested", () => {
    const p = runPlan({ image: V2, spec: { pod: { env: env("1") } }, status: healthy });
    assert.equal(p.status.canary?.template, undefined);
    assert.equal(p.status.canary?.changes, undefined);
    assert.deepEqual(p.templates?.secondary, template("1"));
  });

  test("spec back to what the primary runs starts nothing", () => {
    const p = runPlan({ image: V1, spec: { pod: { env: env("1") } }, status: healthy });
    assert.equal(p.status.canary, undefined);
    assert.deepEqual(reasons(p), []);
  });

  test("a status from before templates were recorded adopts spec's template for the primary", () => {
    const p = runPlan({ image: V1, spec: { pod: { env: env("9") } }, status: { primaryImage: V1 } });
    assert.equal(p.status.canary, undefined);
    assert.deepEqual(p.status.primary?.template, template("9"));
  });

  const running = (extra: Partial<Scenario> = {}): Scenario => ({
    image: V1,
    spec: { pod: { env: env("2") } },
    status: {
      ...testing({ image: V1, stage: "Stepping", step: 1, template: template("2"), changes: "env FOO changed" }),
      primary: primaryRecord(V1, template("1")),
    },
    observed: { secondary: deployment(V1), routedWeights: routed(20) },
    now: 5,
    ...extra,
  });

  test("a pod change mid-test supersedes the running test (not a failure)", () => {
    const p = runPlan(running({ spec: { pod: { env: env("3") } } }));
    assert.equal(p.status.canary?.stage, "RollingBack");
    assert.equal(p.status.canary?.outcome?.reason, "Superseded");
    assert.match(p.status.canary?.outcome?.message ?? "", /pod template changed \(env FOO changed\)/);
    assert.deepEqual(p.status.failedImages ?? [], []);
    assert.deepEqual(p.templates?.secondary, template("2"), "the draining secondary keeps what it ran");
  });

  test("the promote annotation is refused for a template spec no longer asks for", () => {
    const p = runPlan(running({ spec: { pod: { env: env("3") } }, annotations: { "canaryapp.io/promote": "now" } }));
    assert.ok(p.events.some((e) => e.reason === "PromoteRejected" && /pod template changed/.test(e.message)));
  });

  test("promotion hands the tested template to the primary, and Finalising records it", () => {
    const promoting = running({
      status: {
        ...testing({ image: V1, stage: "Promoting", step: 4, template: template("2") }),
        primary: primaryRecord(V1, template("1")),
      },
      observed: { secondary: deployment(V1), primary: deployment(V1, false, 3), routedWeights: routed(50) },
    });
    assert.deepEqual(runPlan(promoting).templates?.primary, template("2"));
    const done = runPlan({ ...promoting, observed: { ...promoting.observed, primary: deployment(V1, true, 3) } });
    assert.equal(done.status.canary?.stage, "Finalising");
    assert.deepEqual(done.status.primary?.template, template("2"));
    assert.notEqual(done.status.primary?.revision, healthy.primary?.revision);
  });

  test("a failed template test is recorded as a failed revision that blocks that template only", () => {
    const failed = runPlan(
      running({
        status: {
          ...testing({ image: V1, stage: "Stepping", step: 1, template: template("2"), changes: "env FOO changed" }),
          primary: primaryRecord(V1, template("1")),
        },
        observed: { secondary: deployment(V1), routedWeights: routed(20), analysis: [evidence(), failing()] },
        now: 30,
      }),
    );
    const entry = failed.status.failedImages?.[0];
    assert.equal(entry?.image, V1);
    assert.equal(entry?.changes, "env FOO changed");
    assert.match(entry?.revision ?? "", /^[0-9a-f]{10}$/);
    const rest = { ...failed.status, canary: undefined } as CanaryAppStatus;
    delete rest.canary;
    const again = runPlan({ image: V1, spec: { pod: { env: env("2") } }, status: rest, now: 60 });
    assert.equal(again.status.phase, "Failed");
    assert.equal(again.status.canary, undefined);
    const other = runPlan({ image: V1, spec: { pod: { env: env("4") } }, status: rest, now: 60 });
    assert.equal(other.status.canary?.stage, "WaitingForSecondary", "another template is another revision");
    const retried = runPlan({
      image: V1,
      spec: { pod: { env: env("2") } },
      status: rest,
      annotations: { "canaryapp.io/retry": entry?.revision ?? "" },
      now: 60,
    });
    assert.deepEqual(retried.status.failedImages, [], "retry names a revision");
  });

  test("an image-only failure blocks the image whatever else the template holds (as the seed did)", () => {
    const status: CanaryAppStatus = {
      ...healthy,
      failedImages: [{ image: V3, failedAt: iso(0), reason: "AnalysisFailed", message: "x" }],
    };
    const p = runPlan({ image: V3, spec: { pod: { env: env("7") } }, status });
    assert.equal(p.status.phase, "Failed");
  });
});

describe("promote exactly what was tested (digest)", () => {
  const stepping = (extra: Partial<Scenario> = {}): Scenario => ({
    image: V2,
    status: testing({ stage: "Stepping", step: 4, stepStartedAt: iso(0) }),
    observed: {
      secondary: deployment(V2),
      routedWeights: routed(50),
      analysis: [evidence(), passing()],
      secondaryPods: pods([V2, `docker-pullable://example/app@${D1}`]),
    },
    now: 30,
    ...extra,
  });

  test("the digest the secondary's ready pods report is recorded, and the primary is pinned to it", () => {
    const p = runPlan(stepping());
    assert.equal(p.status.canary?.stage, "Promoting");
    assert.equal(p.status.canary?.digest, D1);
    assert.deepEqual(p.primary, { image: `example/app@${D1}`, replicas: 3 });
    const done = runPlan({
      ...stepping(),
      status: p.status,
      observed: {
        secondary: deployment(V2),
        primary: deployment(`example/app@${D1}`, true, 3),
        routedWeights: routed(50),
      },
      now: 31,
    });
    assert.equal(done.status.canary?.stage, "Finalising");
    assert.equal(done.status.primaryImage, V2, "the user's reference stays visible");
    assert.equal(done.status.primary?.digest, D1);
    assert.equal(done.status.lastPromotion?.digest, D1);
    assert.deepEqual(done.primary, { image: `example/app@${D1}`, replicas: 3 });
  });

  test("pods of the image that disagree on the digest end the test (DigestsDiffer)", () => {
    const p = runPlan(
      stepping({
        observed: {
          secondary: deployment(V2),
          routedWeights: routed(50),
          secondaryPods: pods([V2, `example/app@${D1}`], [V2, `example/app@${D2}`]),
        },
      }),
    );
    assert.equal(p.status.canary?.stage, "RollingBack");
    assert.equal(p.status.failedImages?.[0]?.reason, "DigestsDiffer");
  });

  test("a digest other than the one under test (the tag pushed again) ends the test (DigestChanged)", () => {
    const s = stepping();
    const p = runPlan({
      ...s,
      status: testing({ stage: "Stepping", step: 2, digest: D2 }),
      observed: { ...s.observed, analysis: undefined, routedWeights: routed(30) },
      now: 5,
    });
    assert.equal(p.status.canary?.outcome?.reason, "DigestChanged");
    assert.equal(p.status.failedImages?.[0]?.digest, D2, "the failure names the digest that was tested");
  });

  test("ready pods without a digest: the reference is promoted, and a Warning says so", () => {
    const p = runPlan(
      stepping({
        observed: {
          secondary: deployment(V2),
          routedWeights: routed(50),
          analysis: [evidence(), passing()],
          secondaryPods: pods([V2, ""]),
        },
      }),
    );
    assert.equal(p.status.canary?.stage, "Promoting");
    assert.deepEqual(p.primary, { image: V2, replicas: 3 });
    assert.ok(reasons(p).includes("DigestUnknown"));
  });

  test("a failure recorded with a digest blocks the same build by any name", () => {
    const status: CanaryAppStatus = {
      ...healthy,
      failedImages: [{ image: "app:v3", digest: D1, failedAt: iso(0), reason: "AnalysisFailed", message: "x" }],
    };
    for (const image of ["app:v3", "docker.io/library/app:v3", `app@${D1}`, `docker.io/library/app@${D1}`]) {
      assert.equal(runPlan({ image, spec: { pod: { env: env("1") } }, status }).status.phase, "Failed", image);
    }
    const other = runPlan({ image: `app@${D2}`, spec: { pod: { env: env("1") } }, status });
    assert.equal(other.status.canary?.stage, "WaitingForSecondary", "another build is tested");
  });
});

describe("which template a workload holds", () => {
  test("the primary showing another revision with the same image is not yet running the promoted template", () => {
    const promoting: Scenario = {
      image: V1,
      spec: { pod: { env: env("2") } },
      status: {
        ...testing({ image: V1, stage: "Promoting", step: 4, template: template("2") }),
        primary: primaryRecord(V1, template("1")),
      },
      observed: {
        secondary: deployment(V1),
        primary: { ...deployment(V1, true, 3), revision: primaryRecord(V1, template("1")).revision },
        routedWeights: routed(50),
      },
      now: 5,
    };
    assert.equal(runPlan(promoting).status.canary?.stage, "Promoting", "the old template is still rolled out");
    const rolledOut = {
      ...promoting,
      observed: {
        ...promoting.observed,
        primary: { ...deployment(V1, true, 3), revision: primaryRecord(V1, template("2")).revision },
      },
    };
    assert.equal(runPlan(rolledOut).status.canary?.stage, "Finalising");
  });

  test("before the first primary exists, a pod change goes to the primary (nothing to test against)", () => {
    const first = runPlan({ image: V1, spec: { pod: { env: env("1") } }, observed: { primary: null } });
    const fixed = runPlan({
      image: V1,
      spec: { pod: { env: env("2") } },
      status: first.status,
      observed: { primary: null },
      now: 5,
    });
    assert.equal(fixed.status.canary, undefined);
    assert.deepEqual(fixed.templates?.primary, template("2"));
  });

  test("property: from rest, any pod change starts a test and leaves the primary's template alone", () => {
    fc.assert(
      fc.property(fc.string({ maxLength: 8 }), fc.integer({ min: 1, max: 65535 }), (value, port) => {
        fc.pre(value !== "1" || port !== 8080);
        const p = runPlan({ image: V1, spec: { imageListenPort: port, pod: { env: env(value) } }, status: healthy });
        return p.status.canary?.stage === "WaitingForSecondary" && p.templates?.primary.pod.env?.[0]?.value === "1";
      }),
      { numRuns: 200 },
    );
  });
});

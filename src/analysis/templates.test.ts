import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { InvalidSpecError } from "../api/errors.js";
import { withDefaults } from "../api/defaults.js";
import { at, iso, makeApp, testing } from "../rollout/fixtures.test-helpers.js";
import type { TemplateVars } from "./templates.js";
import {
  BUILTIN_QUERIES,
  TemplateError,
  queryWindow,
  renderQuery,
  templateVars,
  unknownTemplateVariables,
} from "./templates.js";

const vars: TemplateVars = {
  name: "web",
  namespace: "shop",
  primary: "web-primary",
  secondary: "web-secondary",
  service: "web",
  interval: "30s",
  stepWindow: "37s",
  stepStart: "1772366400",
  primaryRevision: "primary",
  secondaryRevision: "secondary",
  track: "secondary",
  workload: "web-secondary",
  revision: "secondary",
};

describe("renderQuery", () => {
  const cases: [string, string][] = [
    ["{{name}}", "web"],
    ["{{namespace}}/{{service}}", "shop/web"],
    ["{{primary}} {{secondary}}", "web-primary web-secondary"],
    ["rate(x[{{interval}}])", "rate(x[30s])"],
    ["{{ secondary }}", "web-secondary"],
    ["{{primaryRevision}}/{{secondaryRevision}}", "primary/secondary"],
    ['up{job="a"}', 'up{job="a"}'],
  ];
  for (const [template, rendered] of cases) {
    test(`${template} → ${rendered}`, () => assert.equal(renderQuery(template, vars), rendered));
  }

  test("an unknown variable is an invalid spec, named in the error", () => {
    assert.throws(
      () => renderQuery("rate(x{pod=~'{{pods}}'}[{{window}}])", vars),
      (error: unknown) =>
        error instanceof TemplateError &&
        error instanceof InvalidSpecError &&
        error.message.includes("{{pods}}") &&
        error.message.includes("{{window}}"),
    );
  });

  test("the built-in success rate is scoped to the secondary's canonical revision at the destination", () => {
    const q = renderQuery(BUILTIN_QUERIES["request-success-rate"], vars);
    assert.ok(q.includes('reporter="destination"'));
    assert.ok(q.includes('destination_workload_namespace="shop"'));
    assert.ok(q.includes('destination_canonical_service="web",destination_canonical_revision="secondary"'));
    assert.ok(!q.includes("destination_workload="), "a StatefulSet reports both tracks as one workload");
    assert.ok(q.includes("[30s]"));
    assert.ok(q.endsWith("* 100"));
    assert.deepEqual(unknownTemplateVariables(q), []);
  });

  test("the built-in duration is the p99 of the secondary in milliseconds", () => {
    const q = renderQuery(BUILTIN_QUERIES["request-duration"], vars);
    assert.ok(q.startsWith("histogram_quantile(0.99, "));
    assert.ok(q.includes("istio_request_duration_milliseconds_bucket"));
    assert.ok(q.includes('destination_canonical_revision="secondary"'));
  });
});

describe("queryWindow", () => {
  const cases: [number, string][] = [
    [30, "30s"],
    [90, "90s"],
    [1, "10s"],
    [10, "10s"],
    [12.5, "13s"],
  ];
  for (const [seconds, window] of cases)
    test(`${seconds}s → ${window}`, () => assert.equal(queryWindow(seconds), window));
});

describe("templateVars", () => {
  test("names the children of the app, and the window of its interval", () => {
    const app = makeApp({ analysis: { interval: "1m" } });
    assert.deepEqual(templateVars(app, withDefaults(app.spec)), {
      name: "web",
      namespace: "shop",
      primary: "web-primary",
      secondary: "web-secondary",
      service: "web",
      interval: "60s",
      // No test and no time: one interval ending at the epoch.
      stepWindow: "60s",
      stepStart: "-60",
      // A Deployment's pods carry their track as Istio's canonical revision.
      primaryRevision: "primary",
      secondaryRevision: "secondary",
      track: "secondary",
      workload: "web-secondary",
      revision: "secondary",
    });
  });

  test("a StatefulSet's canonical revisions come from the plan (its two tracks are one workload)", () => {
    const app = makeApp({ spec: { workload: { kind: "StatefulSet" } } });
    const spec = withDefaults(app.spec);
    const vars = templateVars(app, spec, undefined, { primary: "5f3a", secondary: "9c1e" });
    assert.equal(renderQuery("{{primaryRevision}} {{secondaryRevision}}", vars), "5f3a 9c1e");
  });

  test("stepWindow and stepStart describe the current step, from when its weight began", () => {
    const app = makeApp({ status: testing({ stepBeganAt: iso(10), stepStartedAt: iso(40) }) });
    const vars = templateVars(app, withDefaults(app.spec), at(47.5));
    assert.equal(vars.stepWindow, "38s");
    assert.equal(vars.stepStart, String(Math.floor(at(10).getTime() / 1000)));
  });

  test("a step seen on the route after it began (a controller died before applying it) counts from the route", () => {
    const app = makeApp({ status: testing({ stepBeganAt: iso(10), stepStartedAt: iso(10), stepRoutedAt: iso(25) }) });
    const vars = templateVars(app, withDefaults(app.spec), at(55));
    assert.equal(vars.stepWindow, "30s");
    assert.equal(vars.stepStart, String(Math.floor(at(25).getTime() / 1000)));
  });

  test("a step without stepBeganAt (written by an older controller) counts from stepStartedAt", () => {
    const app = makeApp({ status: testing({ stepStartedAt: iso(0) }) });
    assert.equal(templateVars(app, withDefaults(app.spec), at(30)).stepWindow, "30s");
  });
});

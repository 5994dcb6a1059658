import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { withDefaults } from "../api/defaults.js";
import type { CanaryAppSpec } from "../api/types.js";
import {
  COMPARE_CHECK_NAME,
  DEFAULT_SUCCESS_RATE_MIN,
  SEED_CHECK_NAME,
  TRAFFIC_CHECK_NAME,
  analysisChecks,
  blindToSecondary,
  checkProblems,
  renderChecks,
} from "./checks.js";
import { iso, makeApp, at, testing } from "../rollout/fixtures.test-helpers.js";
import { BUILTIN_QUERIES, TRAFFIC_QUERY } from "./templates.js";

const spec = (extra: Partial<CanaryAppSpec>) => withDefaults({ ...makeApp().spec, ...extra });

/** The evidence every analysis starts with unless the spec opts out. */
const traffic = { name: TRAFFIC_CHECK_NAME, mode: "traffic", query: TRAFFIC_QUERY, min: 20 } as const;

describe("analysisChecks", () => {
  test("no check at all: the built-in success rate with min 99", () => {
    assert.deepEqual(analysisChecks(spec({})), [
      traffic,
      {
        name: "request-success-rate",
        mode: "threshold",
        query: BUILTIN_QUERIES["request-success-rate"],
        min: DEFAULT_SUCCESS_RATE_MIN,
      },
    ]);
  });

  test("the seed manifest's query, blind to the secondary, does not count as a check: the built-in success rate judges it too", () => {
    const seed =
      'increase(istio_requests_total{destination_service_name="canaryapp-sample",response_code=~"5.*"}[20s]) > 2';
    assert.deepEqual(analysisChecks(spec({ prometheusQuery: seed })), [
      traffic,
      { name: SEED_CHECK_NAME, mode: "seed", query: seed },
      {
        name: "request-success-rate",
        mode: "threshold",
        query: BUILTIN_QUERIES["request-success-rate"],
        min: DEFAULT_SUCCESS_RATE_MIN,
      },
    ]);
  });

  test("the seed query alone is one seed-mode check", () => {
    assert.deepEqual(analysisChecks(spec({ prometheusQuery: "up == 0" })), [
      traffic,
      { name: SEED_CHECK_NAME, mode: "seed", query: "up == 0" },
    ]);
  });

  test("seed query first, then the metrics in order; built-ins get their templates, min/max as given", () => {
    const checks = analysisChecks(
      spec({
        prometheusQuery: "errors > 2",
        analysis: {
          metrics: [
            { name: "request-duration", max: 500 },
            { name: "request-success-rate", min: 95 },
            { name: "queue", query: "sum(queue{app='{{name}}'})", min: 0, max: 10 },
          ],
        },
      }),
    );
    assert.deepEqual(checks, [
      traffic,
      { name: SEED_CHECK_NAME, mode: "seed", query: "errors > 2" },
      { name: "request-duration", mode: "threshold", query: BUILTIN_QUERIES["request-duration"], max: 500 },
      { name: "request-success-rate", mode: "threshold", query: BUILTIN_QUERIES["request-success-rate"], min: 95 },
      { name: "queue", mode: "threshold", query: "sum(queue{app='{{name}}'})", min: 0, max: 10 },
    ]);
  });

  test("a built-in name with its own query uses that query", () => {
    const [, check] = analysisChecks(
      spec({ analysis: { metrics: [{ name: "request-duration", query: "q", max: 1 }] } }),
    );
    assert.equal(check?.query, "q");
  });

  describe("the comparison's bound for a secondary p99 without a primary p99 to compare with", () => {
    const compared = (metrics: NonNullable<CanaryAppSpec["analysis"]>["metrics"]) =>
      analysisChecks(spec({ analysis: { compare: {}, metrics } })).find((c) => c.name === COMPARE_CHECK_NAME)?.compare
        ?.latencyMaxMs;
    const cases: { name: string; metrics: NonNullable<CanaryAppSpec["analysis"]>["metrics"]; want?: number }[] = [
      { name: "the built-in request-duration's max", metrics: [{ name: "request-duration", max: 500 }], want: 500 },
      { name: "none without request-duration", metrics: [{ name: "request-success-rate", min: 99 }] },
      { name: "none when request-duration has only a min", metrics: [{ name: "request-duration", min: 1 }] },
      {
        name: "none when request-duration has its own query (its units are its own)",
        metrics: [{ name: "request-duration", query: "q", max: 2 }],
      },
    ];
    for (const c of cases) test(c.name, () => assert.equal(compared(c.metrics), c.want));
  });

  test("the evidence takes the spec's minimum and query", () => {
    const [check] = analysisChecks(spec({ analysis: { minRequests: 50, trafficQuery: "sum(reqs)" } }));
    assert.deepEqual(check, { name: TRAFFIC_CHECK_NAME, mode: "traffic", query: "sum(reqs)", min: 50 });
  });

  test("requireTraffic: false drops the evidence, and only it", () => {
    assert.deepEqual(analysisChecks(spec({ prometheusQuery: "up == 0", analysis: { requireTraffic: false } })), [
      { name: SEED_CHECK_NAME, mode: "seed", query: "up == 0" },
    ]);
    assert.deepEqual(
      analysisChecks(spec({ analysis: { requireTraffic: false } })).map((c) => c.name),
      ["request-success-rate"],
    );
  });
});

describe("renderChecks", () => {
  test("the step's window is the time since the step began, whole seconds rounded up", () => {
    const app = makeApp({
      spec: { prometheusQuery: 'increase(x{w="{{secondary}}"}[{{stepWindow}}]) > 2' },
      status: testing({ stepStartedAt: iso(30), stepBeganAt: iso(0) }),
    });
    const checks = renderChecks(app, withDefaults(app.spec), at(36.2));
    assert.equal(checks[1]?.query, 'increase(x{w="web-secondary"}[37s]) > 2');
    assert.equal(checks[1]?.window, "37s");
    assert.match(checks[0]?.query ?? "", /destination_canonical_revision="secondary"\}\[37s\]\)\)$/);
  });

  test("an unscoped query has no window to report", () => {
    const app = makeApp({ spec: { prometheusQuery: "up == 0" }, status: testing({}) });
    assert.equal(renderChecks(app, withDefaults(app.spec), at(30))[1]?.window, undefined);
  });
});

describe("checkProblems", () => {
  const cases: { name: string; spec: Partial<CanaryAppSpec>; problems: RegExp[] }[] = [
    { name: "defaults", spec: {}, problems: [] },
    { name: "seed query with known variables", spec: { prometheusQuery: "x{ns='{{namespace}}'}" }, problems: [] },
    {
      name: "seed query with an unknown variable",
      spec: { prometheusQuery: "x{{{pod}}}" },
      problems: [/prometheusQuery .*\{\{pod\}\}/],
    },
    {
      name: "custom metric without query",
      spec: { analysis: { metrics: [{ name: "latency", max: 3 }] } },
      problems: [/latency needs a query/],
    },
    {
      name: "metric without bounds",
      spec: { analysis: { metrics: [{ name: "request-duration" }] } },
      problems: [/request-duration needs min, max or both/],
    },
  ];
  for (const c of cases) {
    test(c.name, () => {
      const problems = checkProblems(spec(c.spec));
      assert.equal(problems.length, c.problems.length, problems.join("; "));
      c.problems.forEach((re, i) => assert.match(problems[i] ?? "", re));
    });
  }
});

describe("blindToSecondary: does a query select a Service the secondary's requests are never reported against?", () => {
  const cases: [string, boolean][] = [
    ['sum(istio_requests_total{destination_service_name="web"})', true],
    ['sum(istio_requests_total{destination_service="web.shop.svc.cluster.local"})', true],
    ['sum(istio_requests_total{destination_service_name = "{{name}}"})', true],
    [
      'sum(istio_requests_total{destination_service_name="{{service}}",destination_canonical_revision="{{secondaryRevision}}"})',
      true,
    ],
    ['sum(istio_requests_total{destination_service_name="{{secondary}}"})', false],
    ['sum(istio_requests_total{destination_service_name="web-secondary"})', false],
    ['sum(istio_requests_total{destination_service="web-secondary.shop.svc.cluster.local"})', false],
    [
      'sum(istio_requests_total{destination_canonical_service="{{name}}",destination_canonical_revision="{{secondaryRevision}}"})',
      false,
    ],
    ['sum(istio_requests_total{destination_workload="{{secondary}}"})', false],
    ['sum(istio_requests_total{destination_service_name!="web"})', false],
    ['sum(istio_requests_total{destination_service_name=~"web.*"})', false],
    ["sum(rate(orders_failed_total[1m]))", false],
  ];
  for (const [query, blind] of cases)
    test(`${blind ? "blind" : "sees it"}: ${query}`, () => assert.equal(blindToSecondary(query), blind));
});

describe("judged metrics (ADR 0030)", () => {
  const P50 = `histogram_quantile(0.5, sum by (le) (rate(d_bucket{revision="{{revision}}",w="{{workload}}"}[10s])))`;
  const judged = { name: "latency-p50", query: P50, judge: { minSamples: 8 }, interval: "2s", weight: 2 };

  test("one metric is two checks, the primary's then the secondary's, with its settings and the defaults", () => {
    const checks = analysisChecks(spec({ analysis: { metrics: [judged] } }));
    assert.deepEqual(
      checks.map((c) => [c.name, c.mode, c.track]),
      [
        [TRAFFIC_CHECK_NAME, "traffic", undefined],
        ["latency-p50", "judge", "primary"],
        ["latency-p50", "judge", "secondary"],
      ],
    );
    assert.deepEqual(checks[1]?.judge, {
      direction: "increase",
      effectTolerance: 0.1,
      minSamples: 8,
      confidence: 0.95,
      weight: 2,
      critical: false,
      mustHaveData: true,
      intervalSeconds: 2,
      score: { pass: 95, marginal: 75 },
    });
  });

  test("rendered for each track over the step, one sample an interval, as the look of its step", () => {
    const app = makeApp({
      spec: { analysis: { stepWeights: [10, 30, 50], metrics: [judged] } },
      status: testing({ step: 1, stepStartedAt: iso(30), stepBeganAt: iso(30) }),
    });
    const [, primary, secondary] = renderChecks(app, withDefaults(app.spec), at(50.7));
    assert.equal(
      primary?.query,
      `histogram_quantile(0.5, sum by (le) (rate(d_bucket{revision="primary",w="web-primary"}[10s])))`,
    );
    assert.equal(
      secondary?.query,
      `histogram_quantile(0.5, sum by (le) (rate(d_bucket{revision="secondary",w="web-secondary"}[10s])))`,
    );
    assert.deepEqual(secondary?.range, { start: iso(30), end: iso(50), stepSeconds: 2 });
    assert.deepEqual(secondary?.judge?.look, { index: 2, planned: 3 });
    assert.equal(secondary?.window, "21s");
  });

  test("a query that names no track, or a judge with min/max, is a problem", () => {
    const problems = checkProblems(
      spec({
        analysis: {
          metrics: [
            { name: "same", query: "up", judge: {} },
            { name: "both", query: 'x{r="{{revision}}"}', judge: {}, max: 3 },
            { name: "spacing", query: 'x{r="{{revision}}"}', judge: {}, interval: "often" },
          ],
        },
      }),
    );
    assert.deepEqual(problems, [
      "the query of judged metric same names no track ({{track}}, {{workload}} or {{revision}}): it would measure the same thing twice",
      "metric both has both a judge and min/max: it is judged one way",
      'metric spacing has an invalid interval "often": use forms like 10s, 1m',
    ]);
  });

  test("a threshold metric keeps its provider and measures the secondary through {{workload}}", () => {
    const provider = { type: "prometheus" as const, address: "http://thanos.monitoring:9090" };
    const app = makeApp({
      spec: { analysis: { metrics: [{ name: "x", query: 'x{w="{{workload}}"}', max: 1, provider }] } },
      status: testing({}),
    });
    const checks = renderChecks(app, withDefaults(app.spec), at(30));
    assert.equal(checks[1]?.query, 'x{w="web-secondary"}');
    assert.deepEqual(checks[1]?.provider, provider);
  });
});

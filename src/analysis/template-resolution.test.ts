import assert from "node:assert/strict";
import { describe, test } from "node:test";
import type { AnalysisTemplateRef, CanaryAnalysisTemplate, CanaryApp, MetricCheck } from "../api/types.js";
import type { TemplateAddress, TemplateLookup } from "./template-resolution.js";
import { argsUsed, resolveTemplates } from "./template-resolution.js";
import { withDefaults } from "../api/defaults.js";
import { analysisChecks } from "./checks.js";
import { describeResult, scoreCheck } from "./verdicts.js";

function app(templates: AnalysisTemplateRef[], metrics: MetricCheck[] = [], namespace = "shop"): CanaryApp {
  return {
    metadata: { namespace, name: "web" },
    spec: { image: "web:2", imageListenPort: 8080, analysis: { templates, metrics } },
  };
}

function template(
  namespace: string | undefined,
  name: string,
  spec: CanaryAnalysisTemplate["spec"],
  resourceVersion = "7",
): CanaryAnalysisTemplate {
  return { metadata: { name, resourceVersion, ...(namespace !== undefined ? { namespace } : {}) }, spec };
}

/** A lookup over a list of templates, as the caches answer. */
function lookupOf(...templates: CanaryAnalysisTemplate[]): TemplateLookup {
  return ({ kind, namespace, name }: TemplateAddress) =>
    templates.find(
      (t) =>
        t.metadata.name === name &&
        (kind === "ClusterCanaryAnalysisTemplate"
          ? t.metadata.namespace === undefined
          : t.metadata.namespace === namespace),
    );
}

const SLO = template(undefined, "slo", {
  args: [{ name: "min", value: "99" }, { name: "service" }],
  metrics: [
    {
      name: "success",
      query: 'sum(rate(ok{svc="{{args.service}}",ns="{{namespace}}"}[{{interval}}])) * {{ args.min }}',
      min: 1,
    },
  ],
});
const CLUSTER = "ClusterCanaryAnalysisTemplate" as const;

describe("resolveTemplates", () => {
  test("an app naming no template resolves to nothing at all", () => {
    assert.equal(resolveTemplates(app([]), lookupOf()), undefined);
  });

  test("args render into the query, the app's values over the defaults; the analysis' variables are kept", () => {
    const got = resolveTemplates(
      app([
        {
          name: "slo",
          kind: CLUSTER,
          args: [
            { name: "service", value: "web" },
            { name: "min", value: "95" },
          ],
        },
      ]),
      lookupOf(SLO),
    );
    assert.deepEqual(got, {
      kind: "resolved",
      templates: [
        {
          kind: CLUSTER,
          name: "slo",
          resourceVersion: "7",
          metrics: [
            {
              name: "success",
              query: 'sum(rate(ok{svc="web",ns="{{namespace}}"}[{{interval}}])) * 95',
              min: 1,
              template: "ClusterCanaryAnalysisTemplate/slo",
            },
          ],
        },
      ],
    });
  });

  test("an arg the app does not give takes the template's default", () => {
    const got = resolveTemplates(
      app([{ name: "slo", kind: CLUSTER, args: [{ name: "service", value: "web" }] }]),
      lookupOf(SLO),
    );
    assert.equal(got?.kind, "resolved");
    assert.match(got.kind === "resolved" ? (got.templates[0]?.metrics[0]?.query ?? "") : "", /\* 99$/);
  });

  test("the template's object is not modified", () => {
    const before = structuredClone(SLO);
    resolveTemplates(app([{ name: "slo", kind: CLUSTER, args: [{ name: "service", value: "web" }] }]), lookupOf(SLO));
    assert.deepEqual(SLO, before);
  });

  const problems: [string, AnalysisTemplateRef[], CanaryAnalysisTemplate[], string, RegExp][] = [
    [
      "a missing cluster template",
      [{ name: "slo", kind: CLUSTER }],
      [],
      "TemplateNotFound",
      /^ClusterCanaryAnalysisTemplate\/slo does not exist$/,
    ],
    [
      "a namespaced template of another namespace (the tenant boundary)",
      [{ name: "rates" }],
      [template("other", "rates", { metrics: [{ name: "x", query: "up", min: 1 }] })],
      "TemplateNotFound",
      /CanaryAnalysisTemplate\/rates does not exist in namespace shop \(a CanaryAnalysisTemplate is used only from the app's own namespace\)/,
    ],
    [
      "a required arg not given",
      [{ name: "slo", kind: CLUSTER }],
      [SLO],
      "TemplateInvalid",
      /ClusterCanaryAnalysisTemplate\/slo needs a value for its arg service/,
    ],
    [
      "an arg the template does not declare",
      [
        {
          name: "slo",
          kind: CLUSTER,
          args: [
            { name: "service", value: "a" },
            { name: "max", value: "1" },
          ],
        },
      ],
      [SLO],
      "TemplateInvalid",
      /ClusterCanaryAnalysisTemplate\/slo has no arg max \(it declares min, service\)/,
    ],
    [
      "a query using an arg that is not declared",
      [{ name: "t" }],
      [template("shop", "t", { metrics: [{ name: "x", query: "up > {{args.limit}}", min: 1 }] })],
      "TemplateInvalid",
      /the query of x in CanaryAnalysisTemplate\/t uses \{\{args\.limit\}\}, which is not one of its args/,
    ],
    [
      "an arg in a provider's address",
      [{ name: "t", args: [{ name: "host", value: "h" }] }],
      [
        template("shop", "t", {
          args: [{ name: "host" }],
          metrics: [
            { name: "x", query: "up", min: 1, provider: { type: "prometheus", address: "http://{{args.host}}" } },
          ],
        }),
      ],
      "TemplateInvalid",
      /the provider address of x in CanaryAnalysisTemplate\/t uses an arg/,
    ],
  ];
  for (const [what, refs, templates, reason, message] of problems) {
    test(`${what}: ${reason}`, () => {
      const got = resolveTemplates(app(refs), lookupOf(...templates));
      assert.equal(got?.kind, "problem");
      if (got?.kind !== "problem") return;
      assert.equal(got.reason, reason);
      assert.match(got.message, message);
    });
  }

  test("a metric name used by the app and a template, or by two templates, is a clash", () => {
    const a = template("shop", "a", { metrics: [{ name: "errors", query: "up", max: 1 }] });
    const b = template("shop", "b", { metrics: [{ name: "errors", query: "up", max: 2 }] });
    const own = resolveTemplates(app([{ name: "a" }], [{ name: "errors", query: "x", max: 1 }]), lookupOf(a));
    assert.deepEqual(own, {
      kind: "problem",
      reason: "TemplateInvalid",
      message: "metric errors of CanaryAnalysisTemplate/a is also in the app's own metrics",
    });
    const two = resolveTemplates(app([{ name: "a" }, { name: "b" }]), lookupOf(a, b));
    assert.equal(
      two?.kind === "problem" ? two.message : "",
      "metric errors of CanaryAnalysisTemplate/b is also in CanaryAnalysisTemplate/a",
    );
  });

  test("every problem is in the one message; a missing template makes it TemplateNotFound", () => {
    const got = resolveTemplates(app([{ name: "gone" }, { name: "slo", kind: CLUSTER }]), lookupOf(SLO));
    assert.equal(got?.kind === "problem" ? got.reason : "", "TemplateNotFound");
    assert.match(
      got?.kind === "problem" ? got.message : "",
      /gone does not exist.*; .*needs a value for its arg service/,
    );
  });

  test("a kind the API server does not serve is said so, not taken for a missing template", () => {
    const got = resolveTemplates(app([{ name: "slo", kind: CLUSTER }]), () => "notServed");
    assert.equal(got?.kind === "problem" ? got.reason : "", "TemplatesNotServed");
    assert.match(got?.kind === "problem" ? got.message : "", /does not serve ClusterCanaryAnalysisTemplate/);
  });
});

describe("argsUsed", () => {
  const cases: [string, string[]][] = [
    ["up", []],
    ["{{args.a}} {{ args.b }} {{args.a}}", ["a", "b"]],
    ["{{namespace}} {{args.x}}", ["x"]],
  ];
  for (const [text, names] of cases)
    test(`${text} → ${names.join(",")}`, () => assert.deepEqual(argsUsed(text), names));
});

describe("a template's metric in the analysis", () => {
  test("its check and its result name the template, and so does the phrase a verdict is told with", () => {
    const spec = withDefaults({
      image: "web:2",
      imageListenPort: 8080,
      analysis: { metrics: [{ name: "errors", query: "up", max: 0, template: "ClusterCanaryAnalysisTemplate/slo" }] },
    });
    const check = analysisChecks(spec).find((c) => c.name === "errors");
    assert.equal(check?.template, "ClusterCanaryAnalysisTemplate/slo");
    if (check === undefined) return;
    const result = scoreCheck(check, { kind: "value", value: 3 });
    assert.equal(result.template, "ClusterCanaryAnalysisTemplate/slo");
    assert.equal(result.passed, false);
    assert.match(describeResult(result), /^errors \(ClusterCanaryAnalysisTemplate\/slo\) /);
  });
});

/**
 * HTTPRoute rules as Istio converts them: istio.io/istio pilot/pkg/config/kube/gateway/conversion.go
 * (convertHTTPRoute, buildHTTPDestination, buildDestination, createMirrorFilter, createURIMatch,
 * createHeadersMatch) and route_collections.go (HTTPRouteCollection: one route per match), with the
 * expected status in testdata/invalid.status.yaml.golden.
 */
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import type { ClusterView } from "./cluster-model.js";
import type { BackendRefLike, HTTPRouteLike, HTTPRouteRuleLike } from "./gateway-api-objects.js";
import { headerRule, httpRoute } from "./fixtures.test-helpers.js";
import { convertHTTPRoute, type ServiceResolver } from "./http-route-rules.js";

const cluster = (namespace: string, name: string): ClusterView => ({
  service: { namespace, name, host: `${name}.${namespace}.svc.cluster.local` },
  endpoints: [],
});
/** Every Service exists but those named. */
const servicesBut =
  (...missing: string[]): ServiceResolver =>
  (ref) =>
    missing.includes(ref.name) ? null : cluster(ref.namespace, ref.name);
const all = servicesBut();

const withRules = (...rules: HTTPRouteRuleLike[]): HTTPRouteLike => ({
  metadata: { name: "web", namespace: "shop" },
  spec: { parentRefs: [{ group: "", kind: "Service", name: "web" }], rules },
});
const backend = (name: string, weight?: number, extra: Partial<BackendRefLike> = {}): BackendRefLike => ({
  name,
  port: 80,
  ...(weight !== undefined ? { weight } : {}),
  ...extra,
});

describe("weights and destinations", () => {
  test("the controller's route: per-track Services by weight, each track told by its Service", () => {
    const { rules, error } = convertHTTPRoute(httpRoute("web", "shop", [90, 10]), false, all);
    assert.equal(error, undefined);
    assert.deepEqual(
      rules.map((r) => [r.name, r.destinations.map((d) => [d.host, d.weight, d.track])]),
      [
        [
          "primary-secondary",
          [
            ["web-primary.shop.svc.cluster.local", 90, "primary"],
            ["web-secondary.shop.svc.cluster.local", 10, "secondary"],
          ],
        ],
      ],
    );
  });

  // weightSum: a backendRef's weight is 1 unless told.
  test("a weight defaults to 1", () => {
    const { rules } = convertHTTPRoute(withRules({ backendRefs: [backend("a"), backend("b", 3)] }), false, all);
    assert.deepEqual(
      rules[0]?.destinations.map((d) => d.weight),
      [1, 3],
    );
  });

  // "Per the Gateway API spec, when there are no >0 weight backends return 500."
  test("no backend with weight: the rule answers 500 itself", () => {
    const { rules, error } = convertHTTPRoute(withRules({ backendRefs: [backend("a", 0)] }), false, all);
    assert.deepEqual([rules[0]?.directResponse, rules[0]?.destinations, error], [500, [], undefined]);
    assert.equal(convertHTTPRoute(withRules({}), false, all).rules[0]?.directResponse, 500, "no backendRefs at all");
  });

  // convertHTTPRoute: a RequestRedirect filter and no backend: the redirect, not 500 (createRedirectFilter;
  // route.go translates no code as 301).
  test("a redirect rule answers its redirect", () => {
    const redirect = (statusCode?: number) =>
      convertHTTPRoute(
        withRules({ filters: [{ type: "RequestRedirect", requestRedirect: statusCode ? { statusCode } : {} }] }),
        false,
        all,
      ).rules[0]?.directResponse;
    assert.deepEqual([redirect(), redirect(302)], [301, 302]);
  });

  // buildDestination: a missing Service is an invalid backend (BackendNotFound, message as in
  // invalid.status.yaml.golden), kept without a cluster: its share of requests is answered 500.
  test("a missing Service: no cluster, ResolvedRefs BackendNotFound naming its host", () => {
    const { rules, error } = convertHTTPRoute(httpRoute("web", "shop", [90, 10]), false, servicesBut("web-secondary"));
    assert.deepEqual(
      rules[0]?.destinations.map((d) => d.cluster === null),
      [false, true],
    );
    assert.deepEqual(error, {
      reason: "BackendNotFound",
      message: "backend(web-secondary.shop.svc.cluster.local) not found",
    });
  });

  // buildHTTPDestination skips weight 0 before resolving: a missing Service with no weight is no error.
  test("a missing Service with weight 0 is not looked at", () => {
    const { error } = convertHTTPRoute(httpRoute("web", "shop", [100, 0]), false, servicesBut("web-secondary"));
    assert.equal(error, undefined);
  });

  test("another kind of backend is invalid (InvalidKind); the last invalid backend names the error", () => {
    const { rules, error } = convertHTTPRoute(
      withRules({ backendRefs: [backend("gone"), backend("bucket", 1, { group: "storage.example", kind: "Bucket" })] }),
      false,
      servicesBut("gone"),
    );
    assert.equal(rules[0]?.destinations.length, 2);
    assert.deepEqual(error, {
      reason: "InvalidKind",
      message: 'referencing unsupported backendRef: group "storage.example" kind "Bucket"',
    });
  });

  // enforceRefGrant is on for Gateway parents only; ReferenceGrants are not read, so none is found.
  test("from a Gateway, a Service of another namespace needs a ReferenceGrant; from the mesh it does not", () => {
    const route = withRules({ backendRefs: [backend("db", 1, { namespace: "data" })] });
    assert.equal(convertHTTPRoute(route, false, all).error, undefined);
    assert.deepEqual(convertHTTPRoute(route, true, all).error, {
      reason: "RefNotPermitted",
      message: 'backendRef db/data not accessible to a HTTPRoute in namespace "shop" (missing a ReferenceGrant?)',
    });
  });

  test("hard errors leave no rule at all: no port, a host name, an unsupported filter", () => {
    const cases: [HTTPRouteRuleLike, string][] = [
      [{ backendRefs: [{ name: "a" }] }, "port is required in backendRef"],
      [
        { backendRefs: [backend("a.shop.svc.cluster.local")] },
        "service name invalid; the name of the Service must be used, not the hostname.",
      ],
      [{ filters: [{ type: "ExtensionRef" }], backendRefs: [backend("a")] }, 'unsupported filter type "ExtensionRef"'],
    ];
    for (const [rule, message] of cases) {
      const converted = convertHTTPRoute(withRules(rule), false, all);
      assert.deepEqual([converted.rules, converted.error?.message], [[], message]);
    }
  });
});

describe("matches", () => {
  // createURIMatch: PathPrefix `/` unless told; createHeadersMatch: Exact unless told.
  test("each match is a rule of its own; path and header types default", () => {
    const { rules } = convertHTTPRoute(
      withRules({
        name: "two",
        matches: [{ headers: [{ name: "X-Canary", value: "always" }] }, { path: { value: "/api/" } }],
        backendRefs: [backend("a")],
      }),
      false,
      all,
    );
    assert.deepEqual(
      rules.map((r) => [r.name, r.matches]),
      [
        [
          "two",
          [
            {
              path: { type: "PathPrefix", value: "/" },
              headers: [{ name: "x-canary", match: { type: "Exact", value: "always" } }],
            },
          ],
        ],
        ["two", [{ path: { type: "PathPrefix", value: "/api" }, headers: [] }]],
      ],
    );
  });

  test("a rule without a name is named `<namespace>.<route>.<index>`; without matches it has none", () => {
    const { rules } = convertHTTPRoute(withRules({ backendRefs: [backend("a")] }), false, all);
    assert.deepEqual([rules[0]?.name, rules[0]?.matches], ["shop.web.0", []]);
  });

  test("a regular expression header match, as the controller's cookie rule", () => {
    const { rules } = convertHTTPRoute(
      {
        ...httpRoute("web", "shop", [100, 0], {
          rules: [headerRule("web", "cookie", "^(.*;\\s*)?canary=always(;.*)?$", true)],
        }),
      },
      false,
      all,
    );
    assert.deepEqual(rules[0]?.matches[0]?.headers, [
      { name: "cookie", match: { type: "RegularExpression", value: "^(.*;\\s*)?canary=always(;.*)?$" } },
    ]);
  });
});

describe("RequestMirror", () => {
  const mirror = (extra: object, name = "web-secondary") => ({
    type: "RequestMirror",
    requestMirror: { backendRef: { name, port: 80 }, ...extra },
  });

  // createMirrorFilter: a fraction (denominator 100 unless told), else a percent, else 100 (route.go,
  // MirrorPercentByPolicy); an explicit 0 mirrors nothing.
  test("percent, fraction, or everything", () => {
    const percents = [
      { percent: 20 },
      { fraction: { numerator: 1, denominator: 8 } },
      { fraction: { numerator: 5 } },
      {},
      { percent: 0 },
    ].map((extra) =>
      convertHTTPRoute(
        withRules({ filters: [mirror(extra)], backendRefs: [backend("web-primary")] }),
        false,
        all,
      ).rules[0]?.mirrors.map((m) => m.percent),
    );
    assert.deepEqual(percents, [[20], [12.5], [5], [100], []]);
  });

  test("the mirror's Service and track", () => {
    const { rules } = convertHTTPRoute(
      withRules({ filters: [mirror({ percent: 20 })], backendRefs: [backend("web-primary")] }),
      false,
      all,
    );
    assert.deepEqual(
      rules[0]?.mirrors.map((m) => [m.destination.host, m.destination.track]),
      [["web-secondary.shop.svc.cluster.local", "secondary"]],
    );
  });

  // A mirror's invalid backend drops the mirror and joins the rule's error (joinErrors).
  test("a missing mirror Service drops the mirror and is reported with the backends' error", () => {
    const { rules, error } = convertHTTPRoute(
      withRules({ filters: [mirror({ percent: 20 }, "gone-mirror")], backendRefs: [backend("gone")] }),
      false,
      servicesBut("gone", "gone-mirror"),
    );
    assert.deepEqual(rules[0]?.mirrors, []);
    assert.deepEqual(error, {
      reason: "BackendNotFound",
      message: "backend(gone.shop.svc.cluster.local) not found; backend(gone-mirror.shop.svc.cluster.local) not found",
    });
  });
});

/**
 * A VirtualService's mesh routes as Istio reads them (istio.io/api networking/v1 VirtualService;
 * istio.io/istio pilot/pkg/networking/core/route/route.go: translateRouteMatch, MirrorPercent,
 * MirrorPercentByPolicy).
 */
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { virtualServiceByHost } from "./fixtures.test-helpers.js";
import { anyMatches, simRequest } from "./request-match.js";
import { meshRoute, meshWeights, virtualServiceRules, type VirtualServiceLike } from "./virtual-service-routes.js";

const host = (track: string) => `web-${track}.shop.svc.cluster.local`;

/** The controller's VirtualService with a header route before the weighted one, and a mirror on it. */
function withCanaryRoutes(mirrorPercentage?: { value?: number }): VirtualServiceLike {
  const base = virtualServiceByHost("web", "shop", [90, 10]);
  const weighted = base.spec?.http?.[0] ?? {};
  return {
    ...base,
    spec: {
      ...base.spec,
      http: [
        {
          name: "canary-by-header",
          match: [
            { headers: { "x-canary": { exact: "always" } } },
            { headers: { cookie: { regex: "^(.*;\\s*)?canary=always(;.*)?$" } } },
          ],
          route: [{ destination: { host: host("secondary") } }],
        },
        {
          ...weighted,
          mirror: { host: host("secondary") },
          ...(mirrorPercentage !== undefined ? { mirrorPercentage } : {}),
        },
      ],
    },
  };
}

describe("virtualServiceRules", () => {
  test("routes in the order written, each with its matches (any of them), destinations and mirror", () => {
    const rules = virtualServiceRules(withCanaryRoutes({ value: 20 })) ?? [];
    assert.deepEqual(
      rules.map((r) => [r.name, r.matches.length, r.destinations.map((d) => [d.host, d.weight]), r.mirrors]),
      [
        ["canary-by-header", 2, [[host("secondary"), 100]], []],
        [
          "primary-secondary",
          0,
          [
            [host("primary"), 90],
            [host("secondary"), 10],
          ],
          [{ host: host("secondary"), percent: 20 }],
        ],
      ],
    );
    const [byHeader] = rules;
    assert.ok(byHeader);
    assert.equal(anyMatches(byHeader.matches, simRequest({ "x-canary": "always" })), true);
    assert.equal(anyMatches(byHeader.matches, simRequest({ cookie: "a=b; canary=always" })), true);
    assert.equal(anyMatches(byHeader.matches, simRequest({ "x-canary": "never" })), false);
  });

  // MirrorPercent: mirrorPercentage.value, else the deprecated mirrorPercent, else 100; an explicit 0 none.
  test("a mirror's percentage: as given, 100 when absent, none at 0", () => {
    const percent = (p?: { value?: number }) =>
      virtualServiceRules(withCanaryRoutes(p))?.[1]?.mirrors.map((m) => m.percent);
    assert.deepEqual([percent({ value: 20 }), percent(undefined), percent({ value: 0 })], [[20], [100], []]);
    const legacy = withCanaryRoutes();
    const route = legacy.spec?.http?.[1];
    assert.ok(route);
    route.mirrorPercent = 5;
    assert.deepEqual(
      virtualServiceRules(legacy)?.[1]?.mirrors.map((m) => m.percent),
      [5],
    );
  });

  test("withoutHeaders, uri and method conditions", () => {
    const rules = virtualServiceRules({
      spec: {
        http: [
          {
            match: [{ withoutHeaders: { "x-canary": {} }, uri: { prefix: "/" }, method: { exact: "GET" } }],
            route: [{ destination: { host: "web-primary" } }],
          },
        ],
      },
    });
    const [rule] = rules ?? [];
    assert.ok(rule);
    assert.equal(anyMatches(rule.matches, simRequest()), true);
    assert.equal(anyMatches(rule.matches, simRequest({ "x-canary": "x" })), false);
  });
});

describe("meshRoute: the route of a request without headers", () => {
  test("skips a header route; weights are the weighted route's", () => {
    assert.deepEqual(meshWeights(withCanaryRoutes()), { primary: 90, secondary: 10 });
    assert.equal(meshRoute(withCanaryRoutes())?.length, 2);
  });

  test("no route takes it: null", () => {
    const onlyHeader = withCanaryRoutes();
    onlyHeader.spec = { ...onlyHeader.spec, http: onlyHeader.spec?.http?.slice(0, 1) ?? [] };
    assert.equal(meshRoute(onlyHeader), null);
  });
});

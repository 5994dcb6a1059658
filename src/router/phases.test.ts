/**
 * The mirror and A/B phases as each router writes them and reads them back (ADR 0027): what is written reads
 * back as the plan asked, so a step is seen routed; what a user edits out of shape reads as null.
 */
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { normalRule } from "../api/match-rule.js";
import { withDefaults } from "../api/defaults.js";
import { seedApp } from "../resources/fixtures.test-helpers.js";
import type { Weights } from "../rollout/types.js";
import { buildHTTPRoute, readHTTPRouteWeights } from "./gateway-api.js";
import { buildVirtualService, readIstioWeights } from "./istio.js";
import { reportedOn } from "./route-status.test-helpers.js";

const app = seedApp();
const spec = withDefaults(app.spec);
const RULES = [
  normalRule({ headers: { "X-Canary": { exact: "insider" } } }),
  normalRule({ cookie: { name: "canary", value: "always" }, headers: { "user-agent": { regex: ".*Mobile.*" } } }),
];
const ab: Weights = { primary: 100, secondary: 0, match: RULES };
const mirrored: Weights = { primary: 100, secondary: 0, mirror: 20 };

/** The HTTPRoute as the API server holds it, accepted by its implementation. */
function served(route: ReturnType<typeof buildHTTPRoute>): unknown {
  return reportedOn(route, { generation: 1 });
}

describe("canonical rules", () => {
  test("a cookie is a regular expression on the cookie header; header names in lower case, sorted", () => {
    assert.deepEqual(RULES[1], {
      headers: {
        cookie: { regex: "^(.*?;\\s*)?(canary=always)(;.*)?$" },
        "user-agent": { regex: ".*Mobile.*" },
      },
    });
    assert.deepEqual(RULES[0], { headers: { "x-canary": { exact: "insider" } } });
  });

  test("the cookie's regular expression matches the cookie among others, and nothing else", () => {
    const re = new RegExp(RULES[1]?.headers?.["cookie"]?.regex ?? "");
    assert.ok(re.test("canary=always"));
    assert.ok(re.test("session=1; canary=always; theme=dark"));
    assert.ok(!re.test("canary=alwaysnot"));
    assert.ok(!re.test("xcanary=always"));
    const dotted = new RegExp(normalRule({ cookie: { name: "a.b", value: "1+1" } }).headers?.["cookie"]?.regex ?? "");
    assert.ok(dotted.test("a.b=1+1") && !dotted.test("aXb=11"), "metacharacters match as written");
  });
});

describe("Istio: the A/B route first, the mirror on the canary route", () => {
  test("A/B: a route named ab-match, its match entries ORed, to the secondary alone, before the split", () => {
    const vs = buildVirtualService(app, spec, ab);
    assert.deepEqual(
      vs.spec.http.map((r) => r.name),
      ["ab-match", "primary-secondary"],
    );
    assert.deepEqual(vs.spec.http[0]?.match, [
      { headers: { "x-canary": { exact: "insider" } } },
      { headers: { cookie: { regex: "^(.*?;\\s*)?(canary=always)(;.*)?$" }, "user-agent": { regex: ".*Mobile.*" } } },
    ]);
    assert.deepEqual(vs.spec.http[0]?.route, [
      { destination: { host: "canaryapp-sample-secondary.demo.svc.cluster.local", port: { number: 80 } }, weight: 100 },
    ]);
    assert.deepEqual(readIstioWeights(vs), ab);
  });

  test("mirror: the canary route mirrors to the secondary's Service with its percentage", () => {
    const vs = buildVirtualService(app, spec, mirrored);
    assert.deepEqual(vs.spec.http.length, 1);
    assert.deepEqual(vs.spec.http[0]?.mirror, {
      host: "canaryapp-sample-secondary.demo.svc.cluster.local",
      port: { number: 80 },
    });
    assert.deepEqual(vs.spec.http[0]?.mirrorPercentage, { value: 20 });
    assert.deepEqual(readIstioWeights(vs), mirrored);
  });

  test("without a phase the route is as before, and reads back without one", () => {
    const vs = buildVirtualService(app, spec, { primary: 90, secondary: 10 });
    assert.deepEqual(Object.keys(vs.spec.http[0] ?? {}).sort(), ["name", "route"]);
    assert.deepEqual(readIstioWeights(vs), { primary: 90, secondary: 10 });
  });

  test("a mirror edited to the primary, or an A/B route edited to split, reads as null", () => {
    const vs = buildVirtualService(app, spec, mirrored);
    const toPrimary = structuredClone(vs);
    const canary = toPrimary.spec.http[0];
    if (canary?.mirror) canary.mirror.host = "canaryapp-sample-primary.demo.svc.cluster.local";
    assert.equal(readIstioWeights(toPrimary), null);
    const split = structuredClone(buildVirtualService(app, spec, ab));
    split.spec.http[0]?.route.push({
      destination: { host: "canaryapp-sample-primary", port: { number: 80 } },
      weight: 0,
    });
    assert.equal(readIstioWeights(split), null);
  });

  test("a mirror without a percentage is Istio's 100 %", () => {
    const vs = structuredClone(buildVirtualService(app, spec, mirrored));
    delete vs.spec.http[0]?.mirrorPercentage;
    assert.equal(readIstioWeights(vs)?.mirror, 100);
  });
});

describe("Gateway API: an A/B rule, a RequestMirror filter", () => {
  test("A/B: a rule named ab-match with header matches (the path the API server defaults, written)", () => {
    const route = buildHTTPRoute(app, spec, ab);
    assert.deepEqual(
      route.spec.rules.map((r) => r.name),
      ["ab-match", "primary-secondary"],
    );
    assert.deepEqual(route.spec.rules[0]?.matches, [
      { path: { type: "PathPrefix", value: "/" }, headers: [{ type: "Exact", name: "x-canary", value: "insider" }] },
      {
        path: { type: "PathPrefix", value: "/" },
        headers: [
          { type: "RegularExpression", name: "cookie", value: "^(.*?;\\s*)?(canary=always)(;.*)?$" },
          { type: "RegularExpression", name: "user-agent", value: ".*Mobile.*" },
        ],
      },
    ]);
    assert.deepEqual(route.spec.rules[0]?.backendRefs, [
      { group: "", kind: "Service", name: "canaryapp-sample-secondary", port: 80, weight: 1 },
    ]);
    assert.deepEqual(readHTTPRouteWeights(served(route)), ab);
  });

  test("mirror: a RequestMirror filter on the canary rule, to the secondary's Service", () => {
    const route = buildHTTPRoute(app, spec, mirrored);
    assert.deepEqual(route.spec.rules[0]?.filters, [
      {
        type: "RequestMirror",
        requestMirror: {
          backendRef: { group: "", kind: "Service", name: "canaryapp-sample-secondary", port: 80 },
          percent: 20,
        },
      },
    ]);
    assert.deepEqual(readHTTPRouteWeights(served(route)), mirrored);
  });

  test("a mirror by fraction (not ours) or to the primary reads as null", () => {
    const route = buildHTTPRoute(app, spec, mirrored);
    const fraction = structuredClone(route) as unknown as {
      spec: { rules: { filters?: { requestMirror: Record<string, unknown> }[] }[] };
    };
    const filter = fraction.spec.rules[0]?.filters?.[0];
    if (filter) filter.requestMirror = { ...filter.requestMirror, percent: undefined, fraction: { numerator: 1 } };
    assert.equal(readHTTPRouteWeights(served(fraction as never)), null);
    const toPrimary = structuredClone(route);
    const mirror = toPrimary.spec.rules[0]?.filters?.[0];
    if (mirror) mirror.requestMirror.backendRef.name = "canaryapp-sample-primary";
    assert.equal(readHTTPRouteWeights(served(toPrimary)), null);
  });
});

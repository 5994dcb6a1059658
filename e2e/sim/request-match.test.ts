/**
 * Route matches as Istio builds them into Envoy's (istio.io/istio pilot/pkg/networking/core/route/route.go,
 * translateRouteMatch; pilot/pkg/config/kube/gateway/conversion.go) and the Gateway API's rule precedence
 * (sigs.k8s.io/gateway-api apis/v1/httproute_types.go, HTTPRouteRule.Matches).
 */
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import {
  anyMatches,
  compareGatewayRules,
  describeMatch,
  fullMatch,
  matchesRequest,
  simRequest,
  type RequestMatch,
} from "./request-match.js";

const header = (name: string, type: "Exact" | "RegularExpression" | "Prefix", value: string): RequestMatch => ({
  headers: [{ name, match: { type, value } }],
});

describe("matching a request", () => {
  test("header names are matched without regard to case; an exact value must be equal", () => {
    const m = header("x-canary", "Exact", "always");
    assert.equal(matchesRequest(m, simRequest({ "X-Canary": "always" })), true);
    assert.equal(matchesRequest(m, simRequest({ "x-canary": "Always" })), false);
    assert.equal(matchesRequest(m, simRequest({})), false);
  });

  // Envoy's safe_regex (RE2) matches the whole value, as Istio translates a `regex` StringMatch.
  test("a regular expression must match the whole value: a cookie among others", () => {
    const cookie = header("cookie", "RegularExpression", "^(.*?;\\s*)?canary=always(;.*)?$");
    assert.equal(matchesRequest(cookie, simRequest({ cookie: "session=abc; canary=always" })), true);
    assert.equal(matchesRequest(cookie, simRequest({ cookie: "canary=always" })), true);
    assert.equal(matchesRequest(cookie, simRequest({ cookie: "canary=alwaysnot" })), false);
    assert.equal(fullMatch("a.c", "abc"), true);
    assert.equal(fullMatch("b", "abc"), false, "a partial match is no match");
    assert.equal(fullMatch("(", "("), false, "an expression that does not compile matches nothing");
  });

  test("a header that must be absent, and one that only must be there", () => {
    const without: RequestMatch = { headers: [{ name: "x-canary", match: { type: "Present" }, absent: true }] };
    assert.equal(matchesRequest(without, simRequest({})), true);
    assert.equal(matchesRequest(without, simRequest({ "x-canary": "" })), false);
    const present: RequestMatch = { headers: [{ name: "x-canary", match: { type: "Present" } }] };
    assert.equal(matchesRequest(present, simRequest({ "x-canary": "" })), true);
  });

  // The Gateway API's PathPrefix matches whole segments; a VirtualService's uri.prefix is a plain prefix.
  test("path prefixes: `/` takes every request", () => {
    const request = simRequest();
    assert.equal(matchesRequest({ headers: [], path: { type: "PathPrefix", value: "/" } }, request), true);
    assert.equal(matchesRequest({ headers: [], path: { type: "PathPrefix", value: "/api" } }, request), false);
    assert.equal(matchesRequest({ headers: [], path: { type: "Prefix", value: "/" } }, request), true);
    assert.equal(matchesRequest({ headers: [], path: { type: "Exact", value: "/" } }, request), true);
  });

  test("a match on the port takes only requests to that port; every condition must hold", () => {
    assert.equal(matchesRequest({ headers: [], port: 80 }, simRequest({}, 80)), true);
    assert.equal(matchesRequest({ headers: [], port: 8080 }, simRequest({}, 80)), false);
    assert.equal(matchesRequest({ headers: [], queryParams: 1 }, simRequest()), false, "no query string");
    assert.equal(matchesRequest({ headers: [], method: "GET" }, simRequest()), true);
    assert.equal(anyMatches([], simRequest()), true, "no match at all takes everything");
    assert.equal(anyMatches([header("a", "Exact", "1"), header("b", "Exact", "2")], simRequest({ b: "2" })), true);
  });
});

describe("Gateway API rule precedence", () => {
  const sorted = (rules: RequestMatch[][]) =>
    rules
      .map((r, i) => ({ r, i }))
      .sort((a, b) => compareGatewayRules(a.r, b.r) || a.i - b.i)
      .map((x) => x.i);
  const prefix = (value: string, headers: RequestMatch["headers"] = []): RequestMatch[] => [
    { headers, path: { type: "PathPrefix", value } },
  ];
  const canary = [{ name: "x-canary", match: { type: "Exact" as const, value: "always" } }];

  // httproute_types.go: "Exact" path match; "Prefix" path match with largest number of characters; method
  // match; largest number of header matches; largest number of query param matches. conversion.go,
  // sortHTTPRoutes, ranks Exact 3 > Prefix 2 > Regex 1 and puts rules without a match last.
  test("exact path over prefix, longer prefix first, more headers first, no match last", () => {
    assert.deepEqual(
      sorted([
        [],
        prefix("/"),
        prefix("/", canary),
        [{ headers: [], path: { type: "Exact", value: "/" } }],
        prefix("/api"),
        [{ headers: [], path: { type: "RegularExpression", value: "/.*" } }],
      ]),
      [3, 4, 2, 1, 5, 0],
    );
  });

  test("the controller's header rule comes before its weighted rule, whatever their order", () => {
    assert.deepEqual(sorted([prefix("/"), prefix("/", canary)]), [1, 0]);
    assert.deepEqual(sorted([prefix("/", canary), prefix("/")]), [0, 1]);
  });

  test("a tie keeps the written order", () => {
    assert.deepEqual(sorted([prefix("/"), prefix("/")]), [0, 1]);
  });

  test("a method match and query parameters weigh in after the path", () => {
    assert.deepEqual(
      sorted([prefix("/"), [{ headers: [], method: "GET", path: { type: "PathPrefix", value: "/" } }]]),
      [1, 0],
    );
    assert.deepEqual(
      sorted([prefix("/"), [{ headers: [], queryParams: 1, path: { type: "PathPrefix", value: "/" } }]]),
      [1, 0],
    );
  });
});

test("describeMatch names each condition", () => {
  assert.equal(
    describeMatch({
      path: { type: "PathPrefix", value: "/" },
      headers: [{ name: "x-canary", match: { type: "Exact", value: "always" } }],
    }),
    "path^/ x-canary=always",
  );
});

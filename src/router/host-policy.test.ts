import assert from "node:assert/strict";
import { describe, test } from "node:test";
import fc from "fast-check";
import { seedApp } from "../resources/fixtures.test-helpers.js";
import { ownNamespaceHost, parseRoutePolicy, routeRefusal, RoutePolicyError, type RoutePolicy } from "./host-policy.js";

/** An app of namespace `demo` with these hosts and gateways. */
function app(hosts: string[], gateways: string[] = []) {
  const a = seedApp({ service: { port: 80, hosts, gateways } });
  a.metadata.namespace = "demo";
  return a;
}

const NONE: RoutePolicy = parseRoutePolicy([], []);

describe("routeRefusal: may an app's route answer for these hosts and attach to these gateways?", () => {
  const cases: { name: string; hosts?: string[]; gateways?: string[]; policy?: RoutePolicy; refused?: string }[] = [
    { name: "no extra host, no gateway" },
    { name: "a short name: a Service of the app's namespace", hosts: ["shop"] },
    { name: "name.namespace", hosts: ["shop.demo"] },
    { name: "name.namespace.svc", hosts: ["shop.demo.svc"] },
    { name: "the FQDN", hosts: ["shop.demo.svc.cluster.local"] },
    { name: "upper case and a trailing dot are the same name", hosts: ["Shop.Demo.svc.cluster.local."] },
    { name: "another namespace's Service", hosts: ["payments.billing.svc.cluster.local"], refused: "HostNotAllowed" },
    { name: "another namespace's short form", hosts: ["payments.billing"], refused: "HostNotAllowed" },
    { name: "a name under another cluster domain", hosts: ["shop.demo.svc.example"], refused: "HostNotAllowed" },
    { name: "a wildcard of the namespace", hosts: ["*.demo.svc.cluster.local"], refused: "HostNotAllowed" },
    { name: "every host", hosts: ["*"], refused: "HostNotAllowed" },
    { name: "an external host", hosts: ["shop.example.com"], refused: "HostNotAllowed" },
    {
      name: "an external host the operator allows by suffix",
      hosts: ["shop.example.com"],
      policy: parseRoutePolicy(["*.example.com"], []),
    },
    {
      name: "a wildcard below an allowed suffix",
      hosts: ["*.shop.example.com"],
      policy: parseRoutePolicy(["*.example.com"], []),
    },
    {
      name: "the suffix itself is not below it",
      hosts: ["example.com"],
      policy: parseRoutePolicy(["*.example.com"], []),
      refused: "HostNotAllowed",
    },
    {
      name: "a name that merely ends with the suffix's text",
      hosts: ["evilexample.com"],
      policy: parseRoutePolicy(["*.example.com"], []),
      refused: "HostNotAllowed",
    },
    { name: "an exact host allowed", hosts: ["shop.example.com"], policy: parseRoutePolicy(["shop.example.com"], []) },
    { name: "* allows any host", hosts: ["payments.billing.svc.cluster.local"], policy: parseRoutePolicy(["*"], []) },
    { name: "the mesh", gateways: ["mesh"] },
    { name: "a shared ingress gateway", gateways: ["istio-system/public-gw"], refused: "GatewayNotAllowed" },
    { name: "a gateway of the app's own namespace, unlisted", gateways: ["own-gw"], refused: "GatewayNotAllowed" },
    {
      name: "a listed gateway",
      gateways: ["istio-system/public-gw"],
      policy: parseRoutePolicy([], ["istio-system/public-gw"]),
    },
    {
      name: "a gateway of a listed namespace/*",
      gateways: ["istio-system/other-gw"],
      policy: parseRoutePolicy([], ["istio-system/*"]),
    },
    {
      name: "a short name resolves to the app's namespace, listed",
      gateways: ["own-gw"],
      policy: parseRoutePolicy([], ["demo/own-gw"]),
    },
    {
      name: "namespace/* does not cover another namespace",
      gateways: ["istio-system/public-gw"],
      policy: parseRoutePolicy([], ["demo/*"]),
      refused: "GatewayNotAllowed",
    },
  ];
  for (const c of cases) {
    test(c.name, () => {
      const refusal = routeRefusal(app(c.hosts ?? [], c.gateways ?? []), c.policy ?? NONE);
      assert.equal(refusal?.reason, c.refused);
    });
  }

  test("the message names the field, the entry and the flag that would allow it", () => {
    const host = routeRefusal(app(["shop", "payments.billing.svc.cluster.local"]), NONE);
    assert.match(host?.message ?? "", /spec\.service\.hosts\[1\] "payments\.billing\.svc\.cluster\.local"/);
    assert.match(host?.message ?? "", /--allowed-hosts/);
    const gateway = routeRefusal(app([], ["mesh", "istio-system/public-gw"]), NONE);
    assert.match(gateway?.message ?? "", /spec\.service\.gateways\[1\] "istio-system\/public-gw"/);
    assert.match(gateway?.message ?? "", /--allowed-gateways/);
  });

  test("a host of any other namespace is never the app's own", () => {
    const label = fc.stringMatching(/^[a-z][a-z0-9-]{0,8}[a-z0-9]$/);
    fc.assert(
      fc.property(label, label, fc.constantFrom("", ".svc", ".svc.cluster.local"), (service, ns, suffix) => {
        fc.pre(ns !== "demo");
        assert.equal(ownNamespaceHost(`${service}.${ns}${suffix}`, "demo"), false);
        assert.equal(ownNamespaceHost(`${service}.demo${suffix}`, "demo"), true);
      }),
    );
  });
});

describe("parseRoutePolicy", () => {
  for (const [hosts, gateways] of [
    [["*"], []],
    [["*.example.com", "api.example.com"], []],
    [[], ["istio-system/public-gw", "team-a/*"]],
  ] as const) {
    test(`accepts ${JSON.stringify([hosts, gateways])}`, () => {
      assert.doesNotThrow(() => parseRoutePolicy(hosts, gateways));
    });
  }
  for (const [hosts, gateways] of [
    [["http://example.com"], []],
    [["*example.com"], []],
    [[], ["public-gw"]],
    [[], ["a/b/c"]],
    [[], ["*/*"]],
  ] as const) {
    test(`refuses ${JSON.stringify([hosts, gateways])}`, () => {
      assert.throws(() => parseRoutePolicy(hosts, gateways), RoutePolicyError);
    });
  }
});

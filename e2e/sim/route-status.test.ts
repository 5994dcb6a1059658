/**
 * `status.parents` as Istio writes it: istio.io/istio pilot/pkg/config/kube/gateway/conditions.go
 * (createRouteStatus), gatewaycommon/conversion.go (SetListenerConditions), pilot/pkg/model/kstatus/helper.go
 * (UpdateConditionIfChanged); expected output as in testdata/mesh.status.yaml.golden and
 * testdata/valid-invalid-parent-ref.status.yaml.golden.
 */
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import type { RouteParentStatusLike } from "./gateway-api-objects.js";
import { gateway, httpRoute } from "./fixtures.test-helpers.js";
import { istioGateways, routeParents } from "./route-parents.js";
import { parentOutcomes, rfc3339, routeParentStatuses, updateCondition, type ParentOutcome } from "./route-status.js";

const T0 = new Date("2026-01-01T00:00:00.123Z");
const T1 = new Date("2026-01-01T00:01:00Z");
const service = { group: "", kind: "Service", name: "web", port: 80 };
const gw = { group: "gateway.networking.k8s.io", kind: "Gateway", namespace: "istio-system", name: "public" };

/** Each entry as [parent, controller, Accepted status/reason/message, ResolvedRefs status/reason/message]. */
const brief = (parents: RouteParentStatusLike[]) =>
  parents.map((p) => [
    `${p.parentRef?.kind ?? "Gateway"} ${p.parentRef?.name}${p.parentRef?.port ? `:${p.parentRef.port}` : ""}`,
    p.controllerName,
    ...(p.conditions ?? []).map((c) => `${c.type} ${c.status} ${c.reason}: ${c.message} @${c.observedGeneration}`),
  ]);

describe("routeParentStatuses", () => {
  // mesh.status.yaml.golden, route `dual` (a Service and a Gateway parent): both Accepted and resolved, under
  // istio.io/gateway-controller, the Gateway's entry first (appended entries sort by parentRefString, descending).
  test("a route taken by its Service and its Gateway", () => {
    const outcomes: ParentOutcome[] = [{ ref: service }, { ref: gw }];
    assert.deepEqual(brief(routeParentStatuses(outcomes, "shop", 3, [], T0)), [
      [
        "Gateway public",
        "istio.io/gateway-controller",
        "Accepted True Accepted: Route was valid @3",
        "ResolvedRefs True ResolvedRefs: All references resolved @3",
      ],
      [
        "Service web:80",
        "istio.io/gateway-controller",
        "Accepted True Accepted: Route was valid @3",
        "ResolvedRefs True ResolvedRefs: All references resolved @3",
      ],
    ]);
    const [first] = routeParentStatuses(outcomes, "shop", 3, [], T0);
    assert.equal(first?.conditions?.[0]?.lastTransitionTime, "2026-01-01T00:00:00Z", "RFC 3339, whole seconds");
    assert.deepEqual(first?.parentRef, gw, "the parentRef as the spec has it");
  });

  // valid-invalid-parent-ref.status.yaml.golden: a refused parent is Accepted False with its reason; the
  // rules' error goes to ResolvedRefs of every parent of that kind.
  test("refused parents and unresolved references", () => {
    const outcomes: ParentOutcome[] = [
      { ref: service, denied: { reason: "NoMatchingParent", message: 'parent service: "web" not found' } },
      {
        ref: gw,
        routeError: { reason: "BackendNotFound", message: "backend(web-secondary.shop.svc.cluster.local) not found" },
      },
    ];
    assert.deepEqual(brief(routeParentStatuses(outcomes, "shop", 1, [], T0)), [
      [
        "Gateway public",
        "istio.io/gateway-controller",
        "Accepted True Accepted: Route was valid @1",
        "ResolvedRefs False BackendNotFound: backend(web-secondary.shop.svc.cluster.local) not found @1",
      ],
      [
        "Service web:80",
        "istio.io/gateway-controller",
        'Accepted False NoMatchingParent: parent service: "web" not found @1',
        "ResolvedRefs True ResolvedRefs: All references resolved @1",
      ],
    ]);
  });

  // createRouteStatus collapses the listeners of one parent: any that takes the route makes it Accepted
  // ("bound to N parents" for more than one); else the least severe refusal, equal ones joined by "; ".
  test("a Gateway with several listeners: one entry", () => {
    const deny = (reason: string, message: string): ParentOutcome => ({ ref: gw, denied: { reason, message } });
    const one = (outcomes: ParentOutcome[]) => brief(routeParentStatuses(outcomes, "shop", 1, [], T0))[0]?.[2];
    assert.equal(
      one([deny("NoMatchingListenerHostname", "a"), { ref: gw }]),
      "Accepted True Accepted: Route was valid @1",
    );
    assert.equal(one([{ ref: gw }, { ref: gw }]), "Accepted True Accepted: Route was valid, bound to 2 parents @1");
    assert.equal(
      one([deny("NoMatchingParent", "port"), deny("NotAllowedByListeners", "ns")]),
      "Accepted False NotAllowedByListeners: ns @1",
    );
    assert.equal(
      one([deny("NoMatchingListenerHostname", "a"), deny("NoMatchingListenerHostname", "b")]),
      "Accepted False NoMatchingListenerHostname: a; b @1",
    );
  });

  test("an entry of ours is updated in place; others' kept; ours for a parent gone removed", () => {
    const theirs: RouteParentStatusLike = {
      parentRef: { name: "other" },
      controllerName: "example.com/gateway",
      conditions: [],
    };
    const first = routeParentStatuses([{ ref: service }, { ref: gw }], "shop", 1, [], T0);
    const current = [theirs, ...first];
    const next = routeParentStatuses([{ ref: service }], "shop", 2, current, T1);
    assert.deepEqual(
      next.map((p) => [p.controllerName, p.parentRef?.name, p.conditions?.map((c) => c.observedGeneration)]),
      [
        ["example.com/gateway", "other", []],
        ["istio.io/gateway-controller", "web", [2, 2]],
      ],
    );
  });

  // UpdateConditionIfChanged keeps lastTransitionTime while the status stays, and changes nothing at all
  // when status, message and observedGeneration are the same: no write at rest.
  test("at rest nothing changes; a new generation keeps the transition time; a new status takes the new time", () => {
    const first = routeParentStatuses([{ ref: service }], "shop", 1, [], T0);
    assert.deepEqual(routeParentStatuses([{ ref: service }], "shop", 1, first, T1), first);
    const bumped = routeParentStatuses([{ ref: service }], "shop", 2, first, T1);
    assert.deepEqual(
      bumped[0]?.conditions?.map((c) => [c.observedGeneration, c.lastTransitionTime]),
      [
        [2, "2026-01-01T00:00:00Z"],
        [2, "2026-01-01T00:00:00Z"],
      ],
    );
    const refused = routeParentStatuses(
      [{ ref: service, denied: { reason: "NoMatchingParent", message: "gone" } }],
      "shop",
      2,
      bumped,
      T1,
    );
    assert.deepEqual(
      refused[0]?.conditions?.map((c) => [c.status, c.lastTransitionTime]),
      [
        ["False", "2026-01-01T00:01:00Z"],
        ["True", "2026-01-01T00:00:00Z"],
      ],
    );
  });

  test("updateCondition appends a new type and, as Istio, ignores a changed reason alone", () => {
    const base = { type: "Accepted", status: "True", reason: "Accepted", message: "m", observedGeneration: 1 };
    assert.deepEqual(updateCondition([], base), [base]);
    assert.deepEqual(updateCondition([base], { ...base, reason: "Other" }), [base]);
  });

  test("rfc3339 drops the milliseconds", () => {
    assert.equal(rfc3339(T0), "2026-01-01T00:00:00Z");
  });
});

describe("from a route and the cluster", () => {
  test("the controller's route with a Gateway in istio-system and a missing secondary Service", () => {
    const route = httpRoute("web", "shop", [90, 10], {
      gateways: [{ namespace: "istio-system", name: "public" }],
      generation: 4,
    });
    const parents = routeParents(route, istioGateways([gateway("public", "istio-system")], [], []), () => true);
    const error = { reason: "BackendNotFound", message: "backend(web-secondary.shop.svc.cluster.local) not found" };
    const statuses = routeParentStatuses(parentOutcomes(parents, { mesh: error, gateway: error }), "shop", 4, [], T0);
    assert.deepEqual(
      brief(statuses).map((e) => e.slice(0, 1).concat(e.slice(3))),
      [
        [
          "Gateway public",
          "ResolvedRefs False BackendNotFound: backend(web-secondary.shop.svc.cluster.local) not found @4",
        ],
        [
          "Service web:80",
          "ResolvedRefs False BackendNotFound: backend(web-secondary.shop.svc.cluster.local) not found @4",
        ],
      ],
    );
  });
});

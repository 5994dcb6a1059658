import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { DEFAULT_BEHAVIOURS } from "./behaviour.js";
import type { ClusterSnapshot } from "./cluster-snapshot.js";
import type { HTTPRouteRuleLike } from "./gateway-api-objects.js";
import {
  appView,
  deploymentApp,
  gatewayApiApp,
  headerRule,
  pod,
  services,
  trackService,
  virtualServiceByHost,
} from "./fixtures.test-helpers.js";
import { buildAppViews, type AppView } from "./mesh-view.js";
import { seededRandom } from "./prng.js";
import { parseHeaderSpec } from "./request-headers.js";
import { chooseTrack, requestsThisTick, simulateRequests, type SimulatedRequest } from "./traffic.js";

const v1 = [
  { name: "web-primary-a", image: "registry/web:v1" },
  { name: "web-primary-b", image: "registry/web:v1" },
];
const v2 = [{ name: "web-secondary-a", image: "registry/web:v2" }];
const v3 = [{ name: "web-secondary-a", image: "registry/web:v3" }];

function countBy<K extends string | number>(requests: SimulatedRequest[], key: (r: SimulatedRequest) => K) {
  const out = new Map<K, number>();
  for (const r of requests) out.set(key(r), (out.get(key(r)) ?? 0) + 1);
  return out;
}

/** `ticks` ticks of 5 requests each (20 rps at 250 ms), as the simulator sends them. */
function run(view: ReturnType<typeof appView>, ticks: number, seed = 7) {
  const random = seededRandom(seed);
  const all: SimulatedRequest[] = [];
  for (let i = 0; i < ticks; i++) all.push(...simulateRequests(view, 5, DEFAULT_BEHAVIOURS, random));
  return all;
}

describe("weight split", () => {
  for (const [primary, secondary] of [
    [90, 10],
    [80, 20],
    [50, 50],
    [1, 99],
  ] as const) {
    test(`${primary}/${secondary} over 2000 ticks converges to the weights`, () => {
      const requests = run(appView({ primary, secondary }, v1, v2), 2000);
      const share = (countBy(requests, (r) => r.track ?? "none").get("secondary") ?? 0) / requests.length;
      assert.equal(requests.length, 10_000);
      assert.ok(Math.abs(share - secondary / 100) < 0.015, `secondary share ${share}`);
    });
  }

  test("weights are relative, and all-zero weights route nothing", () => {
    const random = seededRandom(3);
    let secondary = 0;
    for (let i = 0; i < 10_000; i++) if (chooseTrack({ primary: 1, secondary: 3 }, random) === "secondary") secondary++;
    assert.ok(Math.abs(secondary / 10_000 - 0.75) < 0.015);
    assert.equal(chooseTrack({ primary: 0, secondary: 0 }, random), null);
    assert.deepEqual(
      simulateRequests(appView({ primary: 0, secondary: 0 }, v1, v2), 10, DEFAULT_BEHAVIOURS, random),
      [],
    );
  });

  test("a subset with weight 0 gets nothing even with Ready pods", () => {
    const requests = run(appView({ primary: 100, secondary: 0 }, v1, v2), 200);
    assert.deepEqual([...countBy(requests, (r) => r.track ?? "none")], [["primary", 1000]]);
  });

  test("requests are spread over the subset's Ready pods", () => {
    const requests = run(appView({ primary: 100, secondary: 0 }, v1, v2), 200);
    const perPod = countBy(requests, (r) => r.pod?.name ?? "none");
    assert.deepEqual([...perPod.keys()].sort(), ["web-primary-a", "web-primary-b"]);
    for (const n of perPod.values()) assert.ok(n > 400 && n < 600, `per pod ${n}`);
  });

  test("the same seed sends the same requests", () => {
    const view = appView({ primary: 70, secondary: 30 }, v1, v2);
    assert.deepEqual(run(view, 50, 42), run(view, 50, 42));
    assert.notDeepEqual(run(view, 50, 42), run(view, 50, 43));
  });
});

describe("routing by the data plane's objects", () => {
  // A route destination is a cluster of the Service its host names, whose endpoints are the Ready pods
  // the Service's selector matches (pilot/pkg/serviceregistry/kube/controller/util.go, getPodServices;
  // pkg/config/labels/instance.go, Instance.Match); the track is the destination's, no pod label's.
  test("a destination's endpoints are the pods its Service selects, not those carrying the track label", () => {
    const labelled = pod("web", "shop", "secondary", "labelled-secondary", "web:v2");
    const selected = pod("web", "shop", "primary", "selected", "web:v1");
    selected.metadata = { ...selected.metadata, labels: { ...selected.metadata?.labels, release: "canary" } };
    const snapshot = deploymentApp("web", "shop", [0, 100], [labelled, selected]);
    snapshot.services = [
      ...(snapshot.services ?? []).filter((s) => s.metadata?.name !== "web-secondary"),
      trackService("web", "shop", "secondary", { "canaryapp.io/app": "web", release: "canary" }),
    ];
    const [view] = buildAppViews(snapshot);
    assert.ok(view);
    const requests = simulateRequests(view, 100, DEFAULT_BEHAVIOURS, seededRandom(1));
    assert.deepEqual(
      [...countBy(requests, (r) => `${r.track ?? "-"} ${r.pod?.name ?? "-"} ${r.pod?.workload.name ?? "-"}`)],
      [["secondary selected web-primary", 100]],
    );
  });
});

describe("no healthy upstream", () => {
  test("a destination with weight but no Ready pod answers 503 UH, sent to its Service", () => {
    const requests = run(appView({ primary: 50, secondary: 50 }, v1, []), 400);
    const secondary = requests.filter((r) => r.track === "secondary");
    assert.ok(secondary.length > 800 && secondary.length < 1200, `secondary ${secondary.length}`);
    for (const r of secondary) {
      assert.deepEqual(
        { code: r.code, flags: r.flags, service: r.service?.name, pod: r.pod, reached: r.reached, bad: r.bad },
        { code: 503, flags: "UH", service: "web-secondary", pod: null, reached: false, bad: "noReadyPods" },
      );
    }
    assert.ok(requests.filter((r) => r.track === "primary").every((r) => r.code === 200 && r.flags === "-"));
  });

  test("without a route, the app's Service takes every request: its Ready pods, the primary's since ADR 0010", () => {
    const requests = run(appView(null, v1, v2), 300);
    const perPod = countBy(requests, (r) => r.pod?.name ?? "none");
    assert.deepEqual([...perPod.keys()].sort(), ["web-primary-a", "web-primary-b"]);
    assert.ok(requests.every((r) => r.service?.name === "web" && r.track === "primary" && r.reached));
  });

  test("without a route and without Ready pods, 503 UH from the app's Service, not counted as bad", () => {
    const requests = run(appView(null, [], []), 2);
    assert.equal(requests.length, 10);
    assert.ok(
      requests.every(
        (r) => r.code === 503 && r.flags === "UH" && r.pod === null && r.track === null && r.bad === undefined,
      ),
    );
  });
});

describe("behaviour", () => {
  test("v3 fails every request with 500; other images answer 200 in 10–30 ms", () => {
    const requests = run(appView({ primary: 50, secondary: 50 }, v1, v3), 400);
    const byTrack = (t: string) => requests.filter((r) => r.track === t);
    assert.ok(byTrack("secondary").every((r) => r.code === 500));
    assert.ok(byTrack("primary").every((r) => r.code === 200));
    for (const r of requests) assert.ok(r.latencyMs >= 10 && r.latencyMs < 30, `latency ${r.latencyMs}`);
  });

  test("an error rate is a fraction of requests", () => {
    const behaviours = {
      images: { ":v2": { errorRate: 0.1, latencyMs: 5, jitterMs: 0 } },
      default: DEFAULT_BEHAVIOURS.default,
    };
    const random = seededRandom(9);
    const requests = simulateRequests(appView({ primary: 0, secondary: 100 }, v1, v2), 10_000, behaviours, random);
    const failed = requests.filter((r) => r.code === 500).length / requests.length;
    assert.ok(Math.abs(failed - 0.1) < 0.01, `error rate ${failed}`);
    assert.ok(requests.every((r) => r.latencyMs === 5));
  });
});

describe("requestsThisTick", () => {
  test("20 rps at 250 ms is 5 a tick", () => {
    let carry = 0;
    for (let i = 0; i < 8; i++) {
      const due = requestsThisTick(20, 250, carry);
      assert.equal(due.count, 5);
      carry = due.carry;
    }
  });

  test("fractions carry over: 3 rps sends 3 a second, 30 in 10 seconds", () => {
    let carry = 0;
    let sent = 0;
    for (let i = 0; i < 40; i++) {
      const due = requestsThisTick(3, 250, carry);
      sent += due.count;
      carry = due.carry;
    }
    assert.equal(sent, 30);
  });
});

describe("routes that match on headers, and mirrors", () => {
  const pods = [
    pod("web", "shop", "primary", "web-primary-1", "web:v1"),
    pod("web", "shop", "secondary", "web-secondary-1", "web:v2"),
  ];
  const only = (snapshot: ClusterSnapshot): AppView => {
    const [view] = buildAppViews(snapshot);
    if (!view) throw new Error("no view");
    return view;
  };
  const canary = [parseHeaderSpec("x-canary=always:0.25", "header")];

  // httproute_types.go, HTTPRouteRule.Matches: more header matches first; the header rule takes the
  // requests carrying the header, the weighted rule the others.
  test("an HTTPRoute header rule sends the requests that carry the header to the secondary", () => {
    const view = only(
      gatewayApiApp("web", "shop", [100, 0], pods, { rules: [headerRule("web", "x-canary", "always")] }),
    );
    const requests = simulateRequests(view, 4000, DEFAULT_BEHAVIOURS, seededRandom(2), undefined, canary);
    const share = requests.filter((r) => r.track === "secondary").length / requests.length;
    assert.ok(Math.abs(share - 0.25) < 0.02, `secondary share ${share}`);
  });

  test("a VirtualService header route does the same, by cookie", () => {
    const vs = virtualServiceByHost("web", "shop", [100, 0]);
    vs.spec = {
      ...vs.spec,
      http: [
        {
          name: "canary-by-cookie",
          match: [{ headers: { cookie: { regex: "^(.*?;\\s*)?canary=always(;.*)?$" } } }],
          route: [{ destination: { host: "web-secondary.shop.svc.cluster.local" } }],
        },
        ...(vs.spec?.http ?? []),
      ],
    };
    const view = only({ virtualServices: [vs], services: services("web", "shop"), pods });
    const cookies = [parseHeaderSpec("session=abc", "cookie"), parseHeaderSpec("canary=always:0.1", "cookie")];
    const requests = simulateRequests(view, 4000, DEFAULT_BEHAVIOURS, seededRandom(3), undefined, cookies);
    const share = requests.filter((r) => r.track === "secondary").length / requests.length;
    assert.ok(Math.abs(share - 0.1) < 0.015, `secondary share ${share}`);
  });

  // No rule takes the request: Envoy answers 404 with NR (no route), reaching no workload.
  test("no rule matching a request: 404 NR", () => {
    const route = gatewayApiApp("web", "shop", [100, 0], pods, { rules: [headerRule("web", "x-canary", "always")] });
    const spec = route.httpRoutes?.[0]?.spec;
    assert.ok(spec?.rules);
    spec.rules = spec.rules.slice(0, 1);
    const requests = simulateRequests(only(route), 10, DEFAULT_BEHAVIOURS, seededRandom(1));
    assert.deepEqual(
      [...new Set(requests.map((r) => `${r.code} ${r.flags} ${r.track} ${r.reached} ${r.bad}`))],
      ["404 NR null false noReadyPods"],
    );
  });

  // An HTTPRoute backend whose Service is missing: 500 for its share (httproute_types.go BackendRefs; Istio:
  // route.go applyHTTPRouteDestination, ClusterNotFoundResponseCode INTERNAL_SERVER_ERROR), with NC.
  test("a missing backend Service answers 500 NC for its share; a VirtualService's 503 NC", () => {
    const missing = (snapshot: ClusterSnapshot): ClusterSnapshot => ({
      ...snapshot,
      services: (snapshot.services ?? []).filter((s) => s.metadata?.name !== "web-secondary"),
    });
    const codes = (snapshot: ClusterSnapshot) =>
      [
        ...countBy(
          simulateRequests(only(missing(snapshot)), 400, DEFAULT_BEHAVIOURS, seededRandom(5)),
          (r) => `${r.code} ${r.flags}`,
        ),
      ].sort();
    const fromRoute = codes(gatewayApiApp("web", "shop", [50, 50], pods));
    assert.deepEqual(
      fromRoute.map(([k]) => k),
      ["200 -", "500 NC"],
    );
    assert.deepEqual(
      codes(deploymentApp("web", "shop", [50, 50], pods)).map(([k]) => k),
      ["200 -", "503 NC"],
    );
  });

  // conversion.go: no backendRef with weight: the rule answers 500 itself (no flag, no workload).
  test("an HTTPRoute rule with no weight at all answers 500", () => {
    const requests = simulateRequests(
      only(gatewayApiApp("web", "shop", [0, 0], pods)),
      5,
      DEFAULT_BEHAVIOURS,
      seededRandom(1),
    );
    assert.deepEqual([...new Set(requests.map((r) => `${r.code} ${r.flags} ${r.reached}`))], ["500 - false"]);
  });

  // A mirrored copy goes to the mirror's cluster; its answer is discarded: the caller's code is the primary's.
  test("a RequestMirror filter copies its percent of requests to the secondary; answers stay the primary's", () => {
    const mirror: HTTPRouteRuleLike = {
      name: "primary-secondary",
      filters: [
        { type: "RequestMirror", requestMirror: { backendRef: { name: "web-secondary", port: 80 }, percent: 20 } },
      ],
      backendRefs: [
        { name: "web-primary", port: 80, weight: 100 },
        { name: "web-secondary", port: 80, weight: 0 },
      ],
    };
    const snapshot = gatewayApiApp(
      "web",
      "shop",
      [100, 0],
      [pods[0], pod("web", "shop", "secondary", "web-secondary-1", "web:v3")].filter((p) => p !== undefined),
    );
    const spec = snapshot.httpRoutes?.[0]?.spec;
    assert.ok(spec);
    spec.rules = [mirror];
    const requests = simulateRequests(only(snapshot), 5000, DEFAULT_BEHAVIOURS, seededRandom(8));
    const copies = requests.flatMap((r) => r.mirrors ?? []);
    assert.ok(Math.abs(copies.length / 5000 - 0.2) < 0.02, `mirrored ${copies.length}`);
    assert.ok(
      requests.every((r) => r.track === "primary" && r.code === 200),
      "the caller sees the primary's answers",
    );
    assert.ok(
      copies.every((c) => c.track === "secondary" && c.code === 500 && c.reached && c.pod?.name === "web-secondary-1"),
    );
  });

  test("a VirtualService mirror with mirrorPercentage", () => {
    const vs = virtualServiceByHost("web", "shop", [100, 0]);
    const route = vs.spec?.http?.[0];
    assert.ok(route);
    route.mirror = { host: "web-secondary.shop.svc.cluster.local" };
    route.mirrorPercentage = { value: 50 };
    const requests = simulateRequests(
      only({ virtualServices: [vs], services: services("web", "shop"), pods }),
      2000,
      DEFAULT_BEHAVIOURS,
      seededRandom(4),
    );
    const copies = requests.flatMap((r) => r.mirrors ?? []).length;
    assert.ok(Math.abs(copies / 2000 - 0.5) < 0.04, `mirrored ${copies}`);
  });
});

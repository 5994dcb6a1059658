/**
 * Istio's metrics as each sidecar reports a request, rule by rule. The labels follow istio/proxy
 * source/extensions/filters/http/istio_stats/istio_stats.cc (populatePeerInfo) and its test data
 * (testdata/metric/*.yaml.tmpl); other paths are in istio.io/istio.
 */
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { DEFAULT_BEHAVIOURS } from "./behaviour.js";
import type { ClusterSnapshot } from "./cluster-snapshot.js";
import {
  deploymentApp,
  gateway,
  gatewayApiApp,
  pod,
  statefulSetPod,
  trackService,
  virtualServiceByHost,
} from "./fixtures.test-helpers.js";
import { simulateGatewayRequests } from "./gateway-traffic.js";
import { buildAppViews, type AppView } from "./mesh-view.js";
import { seededRandom } from "./prng.js";
import {
  destinationReport,
  ISTIO_DURATION_BUCKETS_MS,
  istioReports,
  IstioTelemetry,
  simulatedCaller,
  sourceReport,
  type IstioLabels,
} from "./telemetry.js";
import { simulateOutsideMesh, simulateRequests, type SimulatedRequest } from "./traffic.js";

const caller = simulatedCaller("loadgen");

/** The view of `web` in `shop` with all traffic to the secondary, one Ready pod a track unless told. */
function secondaryOnly(secondaryReady = true): AppView {
  const [view] = buildAppViews(
    deploymentApp(
      "web",
      "shop",
      [0, 100],
      [
        pod("web", "shop", "primary", "web-primary-5d8f7c9b4-a1", "web:v1"),
        pod("web", "shop", "secondary", "web-secondary-7b9c6d5f8-b2", "web:v2", secondaryReady),
      ],
    ),
  );
  if (!view) throw new Error("no view");
  return view;
}

function send(view: AppView, live?: ReadonlySet<string>): SimulatedRequest {
  const [request] = simulateRequests(view, 1, DEFAULT_BEHAVIOURS, seededRandom(1), live);
  if (!request) throw new Error("no request");
  return request;
}

const pick = (labels: IstioLabels | null | undefined, keys: (keyof IstioLabels)[]) =>
  Object.fromEntries(keys.map((k) => [k, labels?.[k]]));

const SERVICE_LABELS: (keyof IstioLabels)[] = [
  "destination_service",
  "destination_service_name",
  "destination_service_namespace",
];

describe("reporter=source and reporter=destination", () => {
  // A request that reaches a pod is reported by both sidecars (istio/proxy testdata/metric/
  // client_request_total.yaml.tmpl and server_request_total.yaml.tmpl: the same request, once each).
  test("a request that reaches a pod is reported twice, once by each side", () => {
    const reports = istioReports(secondaryOnly(), send(secondaryOnly()), caller);
    assert.deepEqual(
      reports.map((r) => r.reporter),
      ["source", "destination"],
    );
  });

  // The caller's side takes destination_service from the outbound cluster's istio.services, the Service
  // the route destination names (pilot/pkg/networking/core/cluster_builder.go, addTelemetryMetadata;
  // istio/proxy testdata/bootstrap/client_cluster_metadata_precedence.yaml.tmpl and
  // testdata/metric/client_request_total_cluster_metadata_precedence.yaml.tmpl: its namespace too). A
  // request for the host `web` routed to `web-secondary` reports `web-secondary`, never `web`.
  test("reporter=source: the Service the route sent the request to", () => {
    const view = secondaryOnly();
    const request = send(view);
    assert.deepEqual(pick(sourceReport(view, request, caller), SERVICE_LABELS), {
      destination_service: "web-secondary.shop.svc.cluster.local",
      destination_service_name: "web-secondary",
      destination_service_namespace: "shop",
    });
  });

  // The pod's side takes its inbound cluster's istio.services[0]: a Service that selects the pod
  // (cluster_builder.go, addTelemetryMetadata; cluster-model.ts, inboundService). The secondary's pods are
  // selected by `web-secondary` only, so they report it too, whatever host the caller asked for.
  test("reporter=destination: a Service that selects the pod", () => {
    const request = send(secondaryOnly());
    assert.deepEqual(pick(destinationReport(request, caller), SERVICE_LABELS), {
      destination_service: "web-secondary.shop.svc.cluster.local",
      destination_service_name: "web-secondary",
      destination_service_namespace: "shop",
    });
  });

  // With no Service selecting the pod, its inbound cluster has no istio.services; the host header is not
  // used at the inbound side (pilot/pkg/model/telemetry.go, disableHostHeaderFallback), so the pod's
  // canonical service stands in (istio/proxy testdata/metric/server_disable_host_header_fallback.yaml.tmpl:
  // destination_service "ratings").
  test("reporter=destination with no Service selecting the pod: the canonical service, never the host header", () => {
    const view = secondaryOnly();
    const request = send(view);
    assert.ok(request.pod);
    const orphan = { ...request, pod: { ...request.pod, inboundService: null } };
    assert.deepEqual(pick(destinationReport(orphan, caller), SERVICE_LABELS), {
      destination_service: "web",
      destination_service_name: "web",
      destination_service_namespace: "shop",
    });
  });

  // The pod's own sidecar reports its workload, canonical service and revision, app and version as its
  // metadata says (istio-workload.ts); the caller's learns the same by metadata exchange
  // (testdata/metric/client_request_total.yaml.tmpl and server_request_total.yaml.tmpl agree on them).
  test("both sides name the same workload: the Deployment's, by its ReplicaSet", () => {
    const view = secondaryOnly();
    const keys: (keyof IstioLabels)[] = [
      "destination_workload",
      "destination_workload_namespace",
      "destination_canonical_service",
      "destination_canonical_revision",
      "destination_app",
      "destination_version",
    ];
    const expected = {
      destination_workload: "web-secondary",
      destination_workload_namespace: "shop",
      destination_canonical_service: "web",
      destination_canonical_revision: "secondary",
      destination_app: "web",
      destination_version: "secondary",
    };
    const [source, destination] = istioReports(view, send(view), caller);
    assert.deepEqual(pick(source, keys), expected);
    assert.deepEqual(pick(destination, keys), expected);
  });

  // The caller: its own metadata at the source (its app and version labels as they are: no version, ""),
  // learnt by the destination through metadata exchange ("unknown" for what is empty); mutual TLS is
  // known only at the destination, the source says "unknown" (client_request_total.yaml.tmpl).
  test("the caller's labels, and connection_security_policy, on each side", () => {
    const view = secondaryOnly();
    const keys: (keyof IstioLabels)[] = [
      "source_workload",
      "source_workload_namespace",
      "source_canonical_service",
      "source_canonical_revision",
      "source_app",
      "source_version",
      "connection_security_policy",
    ];
    const [source, destination] = istioReports(view, send(view), caller);
    assert.deepEqual(pick(source, keys), {
      source_workload: "mesh-traffic-simulator",
      source_workload_namespace: "loadgen",
      source_canonical_service: "mesh-traffic-simulator",
      source_canonical_revision: "latest",
      source_app: "mesh-traffic-simulator",
      source_version: "",
      connection_security_policy: "unknown",
    });
    assert.deepEqual(pick(destination, keys), {
      ...pick(source, keys),
      source_version: "unknown",
      connection_security_policy: "mutual_tls",
    });
  });

  // A StatefulSet's tracks are one workload: destination_workload cannot tell them apart, the canonical
  // revision can (pkg/kube/util.go, GetDeployMetaFromPod; pkg/kube/labels/labels.go, CanonicalService).
  test("a StatefulSet app: one destination_workload, the revision tells the tracks apart", () => {
    const selector = (revision: string) => ({ "canaryapp.io/app": "db", "canaryapp.io/revision": revision });
    const snapshot: ClusterSnapshot = {
      virtualServices: [virtualServiceByHost("db", "shop", [50, 50])],
      services: [
        trackService("db", "shop", "primary", selector("6f7d8c")),
        trackService("db", "shop", "secondary", selector("9a1b2c")),
      ],
      pods: [statefulSetPod("db", "shop", 0, "6f7d8c", "db:v1"), statefulSetPod("db", "shop", 1, "9a1b2c", "db:v2")],
    };
    const [view] = buildAppViews(snapshot);
    assert.ok(view);
    const requests = simulateRequests(view, 200, DEFAULT_BEHAVIOURS, seededRandom(3));
    const seen = new Set(
      requests
        .map((r) => destinationReport(r, caller))
        .map((l) => `${l?.destination_workload} ${l?.destination_canonical_revision} ${l?.destination_service_name}`),
    );
    assert.deepEqual([...seen].sort(), ["db 6f7d8c db-primary", "db 9a1b2c db-secondary"]);
  });
});

describe("requests that reach no pod", () => {
  // No healthy upstream: no pod, no destination sidecar, so only the caller reports it; it knows the
  // cluster's Service but no peer (istio_stats.cc: "unknown", canonical revision "latest").
  test("503 UH is reported by the source only, against the route destination's Service", () => {
    const view = secondaryOnly(false);
    const request = send(view);
    assert.deepEqual([request.code, request.flags, request.reached], [503, "UH", false]);
    const reports = istioReports(view, request, caller);
    assert.deepEqual(
      reports.map((r) => r.reporter),
      ["source"],
    );
    assert.deepEqual(
      pick(reports[0], [
        "destination_workload",
        "destination_workload_namespace",
        "destination_canonical_service",
        "destination_canonical_revision",
        "destination_app",
        "destination_service_name",
        "destination_service_namespace",
        "response_flags",
      ]),
      {
        destination_workload: "unknown",
        destination_workload_namespace: "unknown",
        destination_canonical_service: "unknown",
        destination_canonical_revision: "latest",
        destination_app: "unknown",
        destination_service_name: "web-secondary",
        destination_service_namespace: "shop",
        response_flags: "UH",
      },
    );
  });

  // A pod deleted under the request: no sidecar answers; the caller knows the endpoint's telemetry
  // metadata, which carries workload, namespace and canonical service and revision but neither app nor
  // version (pilot/pkg/networking/util/util.go, AppendLbEndpointMetadata).
  test("503 UC to a pod that is gone: the source only, naming the endpoint's workload", () => {
    const view = secondaryOnly();
    const request = send(view, new Set(["shop/web-primary-5d8f7c9b4-a1"]));
    assert.deepEqual([request.code, request.flags, request.reached, request.bad], [503, "UC", false, "reset"]);
    const reports = istioReports(view, request, caller);
    assert.deepEqual(
      reports.map((r) => r.reporter),
      ["source"],
    );
    assert.deepEqual(
      pick(reports[0], [
        "destination_workload",
        "destination_canonical_revision",
        "destination_app",
        "destination_version",
      ]),
      {
        destination_workload: "web-secondary",
        destination_canonical_revision: "secondary",
        destination_app: "unknown",
        destination_version: "unknown",
      },
    );
  });

  // A route to a Service that does not exist: Envoy has no such cluster (503 NC); with no cluster
  // metadata the caller's side falls back to the Host header, which it keeps for outbound traffic
  // (pilot/pkg/model/telemetry.go, disableHostHeaderFallback; istio/proxy
  // testdata/metric/host_header_fallback.yaml.tmpl).
  test("503 NC when the destination's Service does not exist: the source only, by the Host header", () => {
    const snapshot = deploymentApp("web", "shop", [0, 100], [pod("web", "shop", "primary", "p", "web:v1")]);
    const [view] = buildAppViews({ ...snapshot, services: (snapshot.services ?? []).slice(0, 2) });
    assert.ok(view);
    const request = send(view);
    assert.deepEqual([request.code, request.flags, request.bad], [503, "NC", "noReadyPods"]);
    const reports = istioReports(view, request, caller);
    assert.deepEqual(
      reports.map((r) => [
        r.reporter,
        r.destination_service,
        r.destination_service_name,
        r.destination_service_namespace,
      ]),
      [["source", "web.shop.svc.cluster.local", "web.shop.svc.cluster.local", "unknown"]],
    );
  });
});

describe("callers outside the mesh", () => {
  // No sidecar at the caller: only the pod's reports the request, with no peer metadata ("unknown") and no
  // mutual TLS (istio_stats.cc: connection_security_policy "none" when the peer has no certificate).
  test("reported by the destination only, from an unknown source over plain text", () => {
    const [view] = buildAppViews(
      deploymentApp("web", "shop", [0, 100], [pod("web", "shop", "primary", "p", "web:v1")]),
    );
    assert.ok(view);
    const [request] = simulateOutsideMesh(view, 1, DEFAULT_BEHAVIOURS, seededRandom(1));
    assert.ok(request);
    const reports = istioReports(view, request, null);
    assert.deepEqual(
      reports.map((r) => [r.reporter, r.source_workload, r.source_canonical_revision, r.connection_security_policy]),
      [["destination", "unknown", "latest", "none"]],
    );
    assert.equal(reports[0]?.destination_workload, "web-primary");
  });
});

describe("IstioTelemetry", () => {
  test("counts each report and observes durations in Istio's buckets", async () => {
    const telemetry = new IstioTelemetry();
    const view = secondaryOnly();
    const ok = send(view);
    const noUpstream = send(secondaryOnly(false));
    telemetry.record(view, [ok, ok, noUpstream]);
    const text = await telemetry.metrics();
    assert.match(text, /# TYPE istio_requests_total counter/);
    assert.match(text, /# TYPE istio_request_duration_milliseconds histogram/);
    const lines = text.split("\n").filter((l) => l.startsWith("istio_requests_total{"));
    const ok200 = lines.filter((l) => l.includes('response_code="200"'));
    assert.equal(ok200.length, 2, "one series per reporter");
    for (const l of ok200) assert.ok(l.endsWith(" 2"), l);
    assert.ok(
      ok200.every((l) => l.includes('source_workload_namespace="shop"')),
      "callers default to the app's namespace",
    );
    const uh = lines.filter((l) => l.includes('response_flags="UH"'));
    assert.equal(uh.length, 1);
    assert.ok(uh[0]?.includes('reporter="source"') && uh[0].endsWith(" 1"), uh[0]);
    const le = [
      ...text.matchAll(
        /istio_request_duration_milliseconds_bucket\{le="([^"]+)",reporter="destination"[^}]*response_code="200"[^}]*\} (\d+)/g,
      ),
    ];
    assert.deepEqual(
      le.map((m) => m[1]),
      [...ISTIO_DURATION_BUCKETS_MS.map(String), "+Inf"],
    );
    const cumulative: Record<string, number> = Object.fromEntries(le.map((m) => [m[1] ?? "", Number(m[2])] as const));
    assert.deepEqual([cumulative["10"], cumulative["+Inf"]], [0, 2]);
  });
});

describe("requests through a gateway", () => {
  const snapshot: ClusterSnapshot = {
    ...gatewayApiApp(
      "web",
      "shop",
      [0, 100],
      [pod("web", "shop", "secondary", "web-secondary-7b9c6d5f8-b2", "web:v2")],
      {
        gateways: [{ namespace: "istio-system", name: "public" }],
      },
    ),
    gateways: [gateway("public", "istio-system")],
  };
  const through = (s: ClusterSnapshot) => {
    const [view] = buildAppViews(s);
    assert.ok(view);
    const [sent] = simulateGatewayRequests(view, 1, DEFAULT_BEHAVIOURS, seededRandom(1));
    assert.ok(sent);
    const [request] = sent.requests;
    assert.ok(request);
    return { view, request, workload: sent.ingress.workload };
  };

  // The gateway's pods report as the Deployment Istio made for the Gateway (`<name>-<class>`:
  // gatewaycommon/gateway_utils.go GetDefaultName; kube-gateway.yaml ISTIO_META_WORKLOAD_NAME, canonical name,
  // revision `latest`, no app or version label), with reporter "source" (the stats filter's reporter is
  // SERVER_GATEWAY only for waypoints: pilot/pkg/model/telemetry.go, generateStatsConfig).
  test("the gateway reports as source; the pod sees the gateway's workload as its source", () => {
    const { view, request, workload } = through(snapshot);
    const [source, destination] = istioReports(view, request, workload, false);
    const keys: (keyof IstioLabels)[] = [
      "reporter",
      "source_workload",
      "source_workload_namespace",
      "source_canonical_service",
      "source_canonical_revision",
      "source_app",
      "destination_service_name",
      "destination_workload",
    ];
    assert.deepEqual(pick(source, keys), {
      reporter: "source",
      source_workload: "public-istio",
      source_workload_namespace: "istio-system",
      source_canonical_service: "public-istio",
      source_canonical_revision: "latest",
      source_app: "",
      destination_service_name: "web-secondary",
      destination_workload: "web-secondary",
    });
    assert.deepEqual(pick(destination, keys), {
      ...pick(source, keys),
      reporter: "destination",
      source_app: "unknown",
    });
  });

  // pilot/pkg/model/telemetry.go, disableHostHeaderFallback: off for ListenerClassGateway, so a request
  // with no cluster reports destination_service "unknown" at the gateway (istio_stats.cc).
  test("no cluster at the gateway: destination_service unknown, not the Host", () => {
    const missing = {
      ...snapshot,
      services: (snapshot.services ?? []).filter((s) => s.metadata?.name !== "web-secondary"),
    };
    const { view, request, workload } = through(missing);
    assert.deepEqual([request.code, request.flags], [500, "NC"]);
    const [source, ...rest] = istioReports(view, request, workload, false);
    assert.deepEqual(rest, []);
    assert.deepEqual(pick(source, SERVICE_LABELS), {
      destination_service: "unknown",
      destination_service_name: "unknown",
      destination_service_namespace: "unknown",
    });
  });
});

describe("mirrored requests and requests with no route", () => {
  // istio/istio#11093 and #23496: a mirrored request is reported by the mirror target's sidecar only
  // (reporter="destination"), as a request from the caller; nothing at the source.
  test("a mirrored copy: the destination report of the mirror's pod only", () => {
    const view = secondaryOnly();
    const request = send(view);
    const copy = { ...request, pod: view.tracks.primary.readyPods[0] ?? null, track: "primary" as const };
    const reports = istioReports(view, { ...request, mirrors: [copy] }, caller);
    assert.deepEqual(
      reports.map((r) => [r.reporter, r.destination_workload, r.source_workload]),
      [
        ["source", "web-secondary", "mesh-traffic-simulator"],
        ["destination", "web-secondary", "mesh-traffic-simulator"],
        ["destination", "web-primary", "mesh-traffic-simulator"],
      ],
    );
  });

  // 404 NR: no route, no cluster: the sidecar's Host header fallback names the service (telemetry.go).
  test("404 NR from a sidecar: source only, named by the Host header", () => {
    const view = secondaryOnly();
    const reports = istioReports(
      view,
      { track: null, service: null, pod: null, reached: false, code: 404, flags: "NR", latencyMs: 0.5 },
      caller,
    );
    assert.deepEqual(
      reports.map((r) => [
        r.reporter,
        r.response_code,
        r.response_flags,
        r.destination_service_name,
        r.destination_workload,
      ]),
      [["source", "404", "NR", "web.shop.svc.cluster.local", "unknown"]],
    );
  });

  test("IstioTelemetry counts a copy once, at its pod, with its own latency", async () => {
    const telemetry = new IstioTelemetry();
    const view = secondaryOnly();
    const request = send(view);
    telemetry.record(view, [{ ...request, mirrors: [{ ...request, latencyMs: 7000 }] }]);
    const text = await telemetry.metrics();
    const total = text
      .split("\n")
      .filter((l) => l.startsWith("istio_requests_total{"))
      .reduce((n, l) => n + Number(l.split(" ").at(-1)), 0);
    assert.equal(total, 3, "source and destination of the request, destination of the copy");
    assert.match(text, /istio_request_duration_milliseconds_bucket\{le="5000",reporter="destination"[^}]*\} 1\n/);
    assert.match(text, /istio_request_duration_milliseconds_bucket\{le="10000",reporter="destination"[^}]*\} 2\n/);
  });
});

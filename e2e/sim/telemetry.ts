/**
 * Istio's standard request metrics, as the sidecars would report each simulated request: the caller's
 * (reporter="source") and, when the request reached a pod, that pod's (reporter="destination"), each with
 * the labels its proxy can know (istio/proxy source/extensions/filters/http/istio_stats/istio_stats.cc,
 * populatePeerInfo; docs/istio-telemetry.md). Own Registry: nothing global is touched.
 */
import { Counter, Histogram, Registry } from "prom-client";
import { workloadMeta, type WorkloadMeta } from "./istio-workload.js";
import type { AppView } from "./mesh-view.js";
import type { SimulatedRequest } from "./traffic.js";

export const SOURCE_WORKLOAD = "mesh-traffic-simulator";

/** Istio's default buckets for istio_request_duration_milliseconds. */
export const ISTIO_DURATION_BUCKETS_MS = [
  1, 2, 5, 10, 25, 50, 100, 250, 500, 1000, 2500, 5000, 10000, 30000, 60000, 300000, 600000, 1800000, 3600000,
];

export const ISTIO_LABELS = [
  "reporter",
  "source_workload",
  "source_workload_namespace",
  "source_canonical_service",
  "source_canonical_revision",
  "source_app",
  "source_version",
  "destination_workload",
  "destination_workload_namespace",
  "destination_canonical_service",
  "destination_canonical_revision",
  "destination_app",
  "destination_version",
  "destination_service",
  "destination_service_name",
  "destination_service_namespace",
  "response_code",
  "request_protocol",
  "response_flags",
  "connection_security_policy",
] as const;

export type IstioLabel = (typeof ISTIO_LABELS)[number];
export type IstioLabels = Record<IstioLabel, string>;

const UNKNOWN = "unknown";

/**
 * The simulated callers as their sidecar knows them: a pod `mesh-traffic-simulator` labelled
 * `app: mesh-traffic-simulator`, described by the same rules as any pod (istio-workload.ts).
 */
export function simulatedCaller(namespace: string): WorkloadMeta {
  return workloadMeta({ name: SOURCE_WORKLOAD, namespace, labels: { app: SOURCE_WORKLOAD } });
}

const or = (value: string | undefined, fallback: string) => (value === undefined || value === "" ? fallback : value);

/**
 * The labels the caller's sidecar reports (reporter="source"), or null for a caller without one.
 *
 * - source_*: its own metadata; source_app and source_version its own labels as they are.
 * - destination_workload, _canonical_*, _app, _version: the peer's, learnt by metadata exchange from the
 *   pod that answered; when the pod was gone, from the endpoint's metadata, which carries the workload
 *   name, namespace and canonical service and revision but neither app nor version
 *   (pilot/pkg/networking/util/util.go, AppendLbEndpointMetadata); with no endpoint at all, "unknown"
 *   (canonical revision "latest").
 * - destination_service, _name, _namespace: the outbound cluster's `istio.services[0]`, i.e. the Service
 *   the route destination names (pilot/pkg/networking/core/cluster_builder.go, addTelemetryMetadata).
 *   With no cluster (NC, or no route at all: NR) the Host header stands in for both service and name (the
 *   fallback is on for a sidecar's outbound traffic: pilot/pkg/model/telemetry.go, disableHostHeaderFallback)
 *   and the namespace is "unknown". A gateway's listeners have it off (`hostHeaderFallback` false: the same
 *   function, ListenerClassGateway): there both are "unknown".
 * - connection_security_policy: "unknown"; the client side never sets it.
 *
 * A gateway reports with the same reporter as a sidecar's outbound side, "source": Istio sets the stats
 * filter's reporter to SERVER_GATEWAY only for waypoints (pilot/pkg/model/telemetry.go, generateStatsConfig),
 * and the filter reports CLIENT_SIDECAR as "source" (istio_stats.cc).
 */
export function sourceReport(
  app: AppView,
  request: SimulatedRequest,
  caller: WorkloadMeta,
  hostHeaderFallback = true,
): IstioLabels {
  const pod = request.pod;
  // What the caller's proxy learns of the destination workload.
  const peer = pod === null ? null : request.reached ? pod.workload : { ...pod.workload, app: "", version: "" };
  const hostHeader = hostHeaderFallback ? `${app.name}.${app.namespace}.svc.cluster.local` : UNKNOWN;
  const service = request.service;
  return {
    reporter: "source",
    source_workload: caller.name,
    source_workload_namespace: caller.namespace,
    source_canonical_service: caller.canonicalService,
    source_canonical_revision: caller.canonicalRevision,
    source_app: caller.app,
    source_version: caller.version,
    destination_workload: or(peer?.name, UNKNOWN),
    destination_workload_namespace: or(peer?.namespace, UNKNOWN),
    destination_canonical_service: or(peer?.canonicalService, UNKNOWN),
    destination_canonical_revision: or(peer?.canonicalRevision, "latest"),
    destination_app: or(peer?.app, UNKNOWN),
    destination_version: or(peer?.version, UNKNOWN),
    destination_service: service?.host ?? hostHeader,
    destination_service_name: service?.name ?? hostHeader,
    destination_service_namespace: or(service?.namespace ?? peer?.namespace, UNKNOWN),
    response_code: String(request.code),
    request_protocol: "http",
    response_flags: request.flags,
    connection_security_policy: UNKNOWN,
  };
}

/**
 * The labels the destination pod's sidecar reports (reporter="destination"), for a request that reached
 * it; `caller` null for a caller without a sidecar.
 *
 * - destination_workload, _canonical_*, _app, _version: the pod's own metadata; app and version its
 *   labels as they are ("" when absent, which Prometheus shows as no label).
 * - destination_service, _name: the inbound cluster's `istio.services[0]` (cluster-model.ts, inboundService),
 *   else the pod's canonical service: the Host header is never used at the inbound side
 *   (pilot/pkg/model/telemetry.go, disableHostHeaderFallback; istio/proxy
 *   testdata/metric/server_disable_host_header_fallback.yaml.tmpl). _namespace: the pod's own.
 * - source_*: the caller's, learnt by metadata exchange; "unknown" (canonical revision "latest") for a
 *   caller without a sidecar, whose connection is plain text (connection_security_policy "none").
 */
export function destinationReport(request: SimulatedRequest, caller: WorkloadMeta | null): IstioLabels | null {
  const pod = request.pod;
  if (pod === null || !request.reached) return null;
  const own = pod.workload;
  return {
    reporter: "destination",
    source_workload: or(caller?.name, UNKNOWN),
    source_workload_namespace: or(caller?.namespace, UNKNOWN),
    source_canonical_service: or(caller?.canonicalService, UNKNOWN),
    source_canonical_revision: or(caller?.canonicalRevision, "latest"),
    source_app: or(caller?.app, UNKNOWN),
    source_version: or(caller?.version, UNKNOWN),
    destination_workload: own.name,
    destination_workload_namespace: own.namespace,
    destination_canonical_service: own.canonicalService,
    destination_canonical_revision: own.canonicalRevision,
    destination_app: own.app,
    destination_version: own.version,
    destination_service: pod.inboundService?.host ?? own.canonicalService,
    destination_service_name: pod.inboundService?.name ?? own.canonicalService,
    destination_service_namespace: own.namespace,
    response_code: String(request.code),
    request_protocol: "http",
    response_flags: request.flags,
    connection_security_policy: caller === null ? "none" : "mutual_tls",
  };
}

/**
 * Every report of one request: from a caller in the mesh (or a gateway), the source's always and the
 * destination's when the request reached a pod; from a caller outside the mesh (`caller` null), only the
 * destination's. A mirrored copy that reached a pod is reported by that pod's sidecar alone, as a request
 * from the caller: Envoy sends the shadow outside the caller's filter chain, so its stats filter never
 * sees it (istio/istio#11093 and #23496, both open: "no reporter=source metrics for the mirror traffic,
 * but reporter=destination metrics at the other end"). Its Host is the original's: Istio sets
 * `disable_shadow_host_suffix_append` (pilot/pkg/networking/core/route/route.go,
 * TranslateRequestMirrorPolicy; DISABLE_SHADOW_HOST_SUFFIX defaults to true), and the inbound side never
 * reads the Host anyway.
 */
export function istioReports(
  app: AppView,
  request: SimulatedRequest,
  caller: WorkloadMeta | null,
  hostHeaderFallback = true,
): IstioLabels[] {
  const reports: IstioLabels[] = [];
  if (caller !== null) reports.push(sourceReport(app, request, caller, hostHeaderFallback));
  const destination = destinationReport(request, caller);
  if (destination !== null) reports.push(destination);
  for (const copy of request.mirrors ?? []) {
    const mirrored = destinationReport(copy, caller);
    if (mirrored !== null) reports.push(mirrored);
  }
  return reports;
}

/** istio_requests_total and istio_request_duration_milliseconds in a registry of their own. */
export class IstioTelemetry {
  readonly registry = new Registry();
  private readonly requests = new Counter<IstioLabel>({
    name: "istio_requests_total",
    help: "Requests handled, by source, destination and response (simulated).",
    labelNames: ISTIO_LABELS,
    registers: [this.registry],
  });
  private readonly duration = new Histogram<IstioLabel>({
    name: "istio_request_duration_milliseconds",
    help: "Request duration in milliseconds (simulated).",
    labelNames: ISTIO_LABELS,
    buckets: ISTIO_DURATION_BUCKETS_MS,
    registers: [this.registry],
  });

  /** `sourceNamespace` undefined: the callers are taken to live in the app's own namespace. */
  constructor(private readonly sourceNamespace?: string) {}

  /** Counts `requests` to `app`, from callers in the mesh or (`outsideMesh`) from callers without a sidecar. */
  record(app: AppView, requests: readonly SimulatedRequest[], outsideMesh = false): void {
    this.count(app, requests, outsideMesh ? null : simulatedCaller(this.sourceNamespace ?? app.namespace), true);
  }

  /** Counts `requests` that entered through a gateway whose pods report as `gateway` (istio-workload.ts). */
  recordGateway(app: AppView, requests: readonly SimulatedRequest[], gateway: WorkloadMeta): void {
    this.count(app, requests, gateway, false);
  }

  private count(
    app: AppView,
    requests: readonly SimulatedRequest[],
    caller: WorkloadMeta | null,
    hostHeaderFallback: boolean,
  ): void {
    const observe = (labels: IstioLabels, latencyMs: number) => {
      this.requests.inc(labels);
      this.duration.observe(labels, latencyMs);
    };
    for (const { mirrors, ...request } of requests) {
      for (const labels of istioReports(app, request, caller, hostHeaderFallback)) observe(labels, request.latencyMs);
      // A mirrored copy takes as long as its own pod takes.
      for (const copy of mirrors ?? []) {
        const labels = destinationReport(copy, caller);
        if (labels !== null) observe(labels, copy.latencyMs);
      }
    }
  }

  /** The text exposition format, for /metrics. */
  metrics(): Promise<string> {
    return this.registry.metrics();
  }

  get contentType(): string {
    return this.registry.contentType;
  }
}

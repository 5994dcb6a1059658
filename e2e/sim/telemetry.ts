/**
 * Istio's standard request metrics, as a destination sidecar reports them, so that the controller's
 * built-in queries run unchanged against the simulator. Own Registry: nothing global is touched.
 */
import { Counter, Histogram, Registry } from "prom-client";
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
  "destination_workload",
  "destination_workload_namespace",
  "destination_service",
  "destination_service_name",
  "destination_service_namespace",
  "destination_app",
  "destination_version",
  "response_code",
  "request_protocol",
  "response_flags",
  "connection_security_policy",
] as const;

export type IstioLabel = (typeof ISTIO_LABELS)[number];

/** The labels of one request to `app`; `sourceNamespace` is where the simulated callers live. */
export function istioLabels(
  app: AppView,
  request: SimulatedRequest,
  sourceNamespace: string,
): Record<IstioLabel, string> {
  return {
    reporter: "destination",
    source_workload: SOURCE_WORKLOAD,
    source_workload_namespace: sourceNamespace,
    destination_workload: request.workload,
    destination_workload_namespace: app.namespace,
    destination_service: `${app.name}.${app.namespace}.svc.cluster.local`,
    destination_service_name: app.name,
    destination_service_namespace: app.namespace,
    destination_app: app.name,
    destination_version: request.track ?? "unknown",
    response_code: String(request.code),
    request_protocol: "http",
    response_flags: request.flags,
    connection_security_policy: "mutual_tls",
  };
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

  record(app: AppView, requests: readonly SimulatedRequest[]): void {
    for (const request of requests) {
      const labels = istioLabels(app, request, this.sourceNamespace ?? app.namespace);
      this.requests.inc(labels);
      this.duration.observe(labels, request.latencyMs);
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

import { Counter } from "prom-client";
import type { CanaryApp, CanaryAppStatus } from "../api/types.js";
import type { PlannedEvent } from "../rollout/types.js";
import type { ControllerMetrics } from "../server/metrics.js";
import type { ReconcileObserver } from "./ports.js";

/** Reflects each reconcile in the controller's Prometheus metrics. */
export class MetricsObserver implements ReconcileObserver {
  private readonly writes: Counter<"kind" | "verb">;

  constructor(private readonly metrics: ControllerMetrics) {
    this.writes = new Counter({
      name: "canaryapp_api_writes_total",
      help: "Writes the controller made to the API server, by kind and verb. Flat while nothing changes.",
      labelNames: ["kind", "verb"],
      registers: [metrics.registry],
    });
  }

  appObserved(app: CanaryApp, status: CanaryAppStatus): void {
    const { namespace = "", name = "" } = app.metadata;
    this.metrics.setAppState(namespace, name, {
      ...(status.phase ? { phase: status.phase } : {}),
      secondaryWeight: status.weights?.secondary ?? 0,
      failedChecks: status.canary?.failedChecks ?? 0,
    });
  }

  appRemoved(namespace: string, name: string): void {
    this.metrics.removeApp(namespace, name);
  }

  analysisRan(app: CanaryApp, passed: boolean): void {
    this.metrics.countAnalysis(app.metadata.namespace ?? "", app.metadata.name ?? "", passed ? "passed" : "failed");
  }

  eventRecorded(app: CanaryApp, event: PlannedEvent): void {
    this.metrics.countTransition(app.metadata.namespace ?? "", app.metadata.name ?? "", event.reason);
  }

  wrote(kind: string, verb: "apply" | "delete" | "status" | "annotate" | "event"): void {
    this.writes.inc({ kind, verb });
  }
}

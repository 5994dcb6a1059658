import { Counter } from "prom-client";
import type { CanaryApp, CanaryAppStatus, CanaryState, MetricResult } from "../api/types.js";
import type { PlannedEvent } from "../rollout/types.js";
import type { ControllerMetrics } from "../server/metrics.js";
import type { ReconcileObserver } from "./ports.js";

/** Reflects each reconcile in the controller's Prometheus metrics. */
export class MetricsObserver implements ReconcileObserver {
  private readonly writes: Counter<"kind" | "verb">;
  /** When the current step of each app began, as last seen. */
  private readonly steps = new Map<string, string>();

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
    this.observeSteps(`${namespace}/${name}`, namespace, name, status.canary);
    this.metrics.setFailedImages(namespace, name, status.failedImages ?? []);
    this.metrics.setAppState(namespace, name, {
      ...(status.phase ? { phase: status.phase } : {}),
      secondaryWeight: status.weights?.secondary ?? 0,
      secondaryMirrorPercent: status.weights?.mirror ?? 0,
      secondaryMatched: status.weights?.match === true,
      failedChecks: status.canary?.failedChecks ?? 0,
    });
  }

  appRemoved(namespace: string, name: string): void {
    this.steps.delete(`${namespace}/${name}`);
    this.metrics.removeApp(namespace, name);
  }

  analysisRan(app: CanaryApp, passed: boolean, results?: readonly MetricResult[]): void {
    const { namespace = "", name = "" } = app.metadata;
    this.metrics.countAnalysis(namespace, name, passed ? "passed" : "failed");
    if (results !== undefined) this.metrics.setAnalysis(namespace, name, results);
  }

  /**
   * A step ends when the next begins (its `stepBeganAt` moves on) or when the test leaves its steps (promotion,
   * rollback): its duration is observed once, from the statuses this process saw.
   */
  private observeSteps(key: string, namespace: string, name: string, canary: CanaryState | undefined): void {
    const previous = this.steps.get(key);
    const stepping = canary !== undefined && (canary.stage === "Stepping" || canary.stage === "AwaitingPromotion");
    const began = stepping ? canary.stepBeganAt : undefined;
    if (previous !== undefined && previous !== began) {
      const end = began ?? canary?.stepStartedAt;
      const seconds = end === undefined ? NaN : (Date.parse(end) - Date.parse(previous)) / 1000;
      if (Number.isFinite(seconds) && seconds >= 0) this.metrics.observeStep(namespace, name, seconds);
    }
    if (began === undefined) this.steps.delete(key);
    else this.steps.set(key, began);
  }

  eventRecorded(app: CanaryApp, event: PlannedEvent): void {
    this.metrics.countTransition(app.metadata.namespace ?? "", app.metadata.name ?? "", event.reason);
  }

  wrote(kind: string, verb: "apply" | "delete" | "status" | "annotate" | "event"): void {
    this.writes.inc({ kind, verb });
  }
}

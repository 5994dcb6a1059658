import { pino } from "pino";
import type { CanaryApp, CanaryAppStatus } from "../../src/api/types.js";
import type { RunningController } from "../../src/app.js";
import { startController } from "../../src/app.js";
import type { ReconcileObserver } from "../../src/canary/ports.js";
import { loadConfig } from "../../src/config.js";
import type { ControllerMetrics } from "../../src/server/metrics.js";
import type { PlannedEvent } from "../../src/rollout/types.js";

/** Everything the controller under test reported, for assertions. */
export class RecordingObserver implements ReconcileObserver {
  readonly writes: { kind: string; verb: string; at: number }[] = [];
  readonly events: (PlannedEvent & { app: string; at: number })[] = [];
  readonly statuses: (CanaryAppStatus & { app: string; at: number })[] = [];
  analyses = 0;

  appObserved(app: CanaryApp, status: CanaryAppStatus): void {
    this.statuses.push({ ...structuredClone(status), app: app.metadata.name ?? "", at: Date.now() });
  }
  appRemoved(): void {}
  analysisRan(): void {
    this.analyses++;
  }
  eventRecorded(app: CanaryApp, event: PlannedEvent): void {
    this.events.push({ ...event, app: app.metadata.name ?? "", at: Date.now() });
  }
  wrote(kind: string, verb: string): void {
    this.writes.push({ kind, verb, at: Date.now() });
  }
  writesSince(time: number): { kind: string; verb: string; at: number }[] {
    return this.writes.filter((w) => w.at >= time);
  }
}

export interface TestController {
  observer: RecordingObserver;
  running: RunningController;
  stop(): Promise<void>;
}

/**
 * The URL policy of controllers under test: the default (in-cluster Services), the loopback address, where the
 * tests' Prometheus listens, and the seed sample's Prometheus by its exact host (a Service that does not exist
 * on the test API server; an exact host is the operator's choice and is not looked up).
 */
export const TEST_URL_POLICY =
  "--prometheus-url-policy=127.0.0.1,prometheus.istio-system.svc,*.svc,*.svc.cluster.local";

/**
 * Runs the real controller in this process, watching one namespace, without leader election, with
 * `TEST_URL_POLICY` unless `extraFlags` give another.
 */
export function runController(
  namespace: string,
  extraFlags: string[] = [],
  env: Record<string, string> = {},
  options: { metrics?: ControllerMetrics } = {},
): TestController {
  const config = loadConfig(
    [`--namespaces=${namespace}`, "--leader-elect=false", "--http-address=127.0.0.1:0", TEST_URL_POLICY, ...extraFlags],
    { KUBECONFIG: process.env["KUBECONFIG"], ...env },
  );
  const observer = new RecordingObserver();
  const log = pino({ level: process.env["TEST_LOG_LEVEL"] ?? "silent" });
  const running = startController({ config, log, observer, ...options });
  return { observer, running, stop: () => running.stop() };
}

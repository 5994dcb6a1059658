/**
 * The CanaryReconciler with what it judges and tells through: the analysis providers (Prometheus, webhooks)
 * run off the work queue, and the notifications.
 */
import type { Logger } from "pino";
import type { Clock } from "../time/clock.js";
import { DEFAULTS } from "../api/defaults.js";
import { LABELS, type CanaryApp } from "../api/types.js";
import { AnalysisRuns } from "../canary/analysis-runs.js";
import type { ReconcileObserver } from "../canary/ports.js";
import { CanaryReconciler } from "../canary/reconciler.js";
import type { Config } from "../config.js";
import { shareLabelValue } from "../controller/shards.js";
import { objectKey } from "../object-keys.js";
import { analysisByMode } from "../analysis/providers/by-mode.js";
import { analysisByProvider } from "../analysis/providers/by-provider.js";
import { metricSources, sourceAccessOf } from "../analysis/providers/sources.js";
import { ProviderPool } from "../analysis/providers/prometheus/factory.js";
import { prometheusAnalysis } from "../analysis/providers/prometheus.js";
import { NotificationDeliveries } from "../notify/deliveries.js";
import { hasReceivers, NOTIFICATION_REFUSED, noticeSender } from "../notify/sender.js";
import { routeRefusal } from "../router/host-policy.js";
import { ROUTERS } from "../router/routers.js";
import { DEFAULT_WEBHOOK_TIMEOUT_SECONDS } from "../analysis/checks.js";
import { webhookAnalysis, webhookDeadlineMs, webhookRefusal } from "../analysis/providers/webhook.js";
import { deploymentTarget } from "../workload/deployment.js";
import type { Access } from "./access.js";
import type { AppCaches } from "./caches.js";
import type { LateQueue } from "./later.js";
import type { Sharding } from "./sharding.js";

/** The host (and port) of a Prometheus URL: what the analyses in flight are bounded by. */
export function prometheusHost(url: string | undefined): string {
  if (url === undefined) return "";
  try {
    return new URL(url).host;
  } catch {
    return url;
  }
}

interface ReconcilerParts {
  config: Config;
  log: Logger;
  clock: Clock;
  observer: ReconcileObserver;
  caches: AppCaches;
  access: Access;
  sharding: Pick<Sharding, "writer" | "events" | "fence">;
  /** The Controller's queue (made later), where a finished analysis or delivery queues its app. */
  queue: Pick<LateQueue, "add">;
}

/** The CanaryReconciler: it observes the caches and acts through the (fenced) writer and Event sink. */
export function buildReconciler(parts: ReconcilerParts): CanaryReconciler {
  const { config, log, clock, observer, caches, access } = parts;
  const { writer, events, fence } = parts.sharding;
  return new CanaryReconciler({
    caches,
    writer,
    events,
    analyses: analysisRuns(parts),
    notices: {
      deliveries: notificationDeliveries(parts),
      enabled: (app) => hasReceivers(app, config.notificationURL),
    },
    // Sharded, every child carries its app's share, by which a replica gaining the share lists it.
    ...(fence !== undefined
      ? {
          childLabels: (app: CanaryApp) => ({
            [LABELS.share]: shareLabelValue(fence.shareOf(objectKey(app) ?? ""), config.shards),
          }),
        }
      : {}),
    vetPrometheus: (app) => access.prometheus.vet(app) ?? webhookRefusal(app, access.destinations),
    vetRoute: (app) => routeRefusal(app, access.routePolicy),
    router: ROUTERS.istio,
    workload: deploymentTarget,
    observer,
    log,
    clock,
  });
}

/**
 * The analyses, off the work queue: webhook checks (rollout webhooks, gates) go to their URLs, every other to
 * its metric source (docs/providers.md), the app's Prometheus when it names none.
 */
function analysisRuns({ config, log, clock, access, queue }: ReconcilerParts): AnalysisRuns {
  return new AnalysisRuns({
    provider: analysisByMode(
      { webhook: webhookAnalysis({ destinations: access.destinations, limiter: access.posts }) },
      analysisByProvider(
        metricSources(sourceAccessOf(access.prometheus)),
        prometheusAnalysis({
          defaults: {
            prometheusURL: config.defaultPrometheusURL,
            log: log.child({ component: "prometheus" }),
            vet: access.prometheus.check,
            allowRedirect: access.prometheus.allowRedirect,
            credentialsMayGo: access.prometheus.credentialsMayGo,
          },
          readSecret: access.prometheus.readSecret,
          pool: new ProviderPool(),
        }),
      ),
    ),
    requeue: (key) => queue.add(key),
    hostOf: (app) => prometheusHost(app.spec.prometheusURL ?? config.defaultPrometheusURL),
    deadlineMs: (app) =>
      Math.max(
        (app.spec.prometheus?.timeoutSeconds ?? DEFAULTS.prometheusTimeoutSeconds) * 1000,
        webhookDeadlineMs(app, DEFAULT_WEBHOOK_TIMEOUT_SECONDS),
      ),
    clock,
    log: log.child({ component: "analysis" }),
  });
}

/** The notifications' deliveries, off the work queue; a refused one is told as an Event on its app. */
function notificationDeliveries({
  config,
  log,
  clock,
  access,
  sharding,
  queue,
}: ReconcilerParts): NotificationDeliveries {
  return new NotificationDeliveries({
    send: noticeSender({
      readSecret: access.prometheus.readSecret,
      destinations: access.destinations,
      allowPlainHttpCredentials: config.allowPlainHttpCredentials,
      limiter: access.posts,
      skipped: (app, message) =>
        void sharding.events
          .record(app, { type: "Warning", reason: NOTIFICATION_REFUSED, message })
          .catch(() => undefined),
      controllerURL: config.notificationURL,
      log: log.child({ component: "notifications" }),
    }),
    requeue: (key) => queue.add(key),
    clock,
    log: log.child({ component: "notifications" }),
  });
}

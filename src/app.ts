/**
 * Starts the controller from the builders of src/wiring/, each called once its parts exist; the parts made
 * after a closure that uses them are reached through a `Later` (wiring/later.ts).
 */
import type { Logger } from "pino";
import type { Clock } from "./time/clock.js";
import { systemClock } from "./time/clock.js";
import type { ReconcileObserver } from "./canary/ports.js";
import type { Config } from "./config.js";
import type { Controller } from "./controller/controller.js";
import type { ShardWork } from "./controller/shard-work.js";
import { KubeRest } from "./kube/rest.js";
import { controllerUserAgent } from "./kube/user-agent.js";
import type { ControllerMetrics } from "./server/metrics.js";
import { buildAccess } from "./wiring/access.js";
import { buildCaches } from "./wiring/caches.js";
import { buildController } from "./wiring/controller.js";
import { watchAppObjects } from "./wiring/handlers.js";
import { Later, lateQueue } from "./wiring/later.js";
import { buildReconciler } from "./wiring/reconciler.js";
import { runAlone, runLeader, runSharded, type RunningController } from "./wiring/run.js";
import { buildSharding } from "./wiring/sharding.js";

export type { RunningController } from "./wiring/run.js";

export interface StartOptions {
  config: Config;
  log: Logger;
  observer: ReconcileObserver;
  /** Receives reconcile durations and the queue depth. */
  metrics?: ControllerMetrics;
  clock?: Clock;
}

/** Wires clients, informers, the reconciler, the work-queue controller and leader election, and starts them. */
export function startController({
  config,
  log,
  observer,
  metrics,
  clock = systemClock,
}: StartOptions): RunningController {
  // One client for requests and watches: its connection pools, credentials and User-Agent.
  const api = KubeRest.connect(config.kubeconfig, undefined, {
    log,
    // The API server's audit log names the replica behind each write by it.
    userAgent: controllerUserAgent(config.leaderElection.identity),
    ...(metrics !== undefined && { onRequest: (verb) => metrics.countApiRequest(verb) }),
  });
  const sharded = config.leaderElection.enabled && config.shards > 1;
  // Made further down, used by closures made before them: the shard work (what the caches keep, where an app
  // judged again goes) and the Controller (whose queue the shard work, the analyses and the deliveries add to).
  const later = {
    work: new Later<ShardWork | undefined>("the shard work"),
    controller: new Later<Controller>("the controller"),
  };
  const queue = lateQueue(later.controller, later.work);

  const { caches, named, shardCaches } = buildCaches({ api, config, log, sharded, work: later.work });
  const access = buildAccess({ api, config, log, clock, queue });
  const sharding = buildSharding({ api, config, log, clock, observer, metrics, sharded, caches, shardCaches, queue });
  const work = later.work.set(sharding.work);
  const reconciler = buildReconciler({ config, log, clock, observer, caches, access, sharding, queue });
  const controller = later.controller.set(
    buildController({ config, log, metrics, reconciler, fence: sharding.fence, named }),
  );
  watchAppObjects({ controller, caches, secrets: access.secrets, reconciler, work, queue });

  if (!config.leaderElection.enabled) return runAlone(controller);
  if (sharding.shards !== undefined) {
    return runSharded({ controller, shards: sharding.shards, sharding, canaryApps: caches.canaryApps, metrics });
  }
  return runLeader({ api, config, log, controller });
}

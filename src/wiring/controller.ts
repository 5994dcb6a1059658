/** The work-queue Controller that runs the reconciler, and the figures it publishes. */
import type { Logger } from "pino";
import type { CanaryReconciler } from "../canary/reconciler.js";
import type { Config } from "../config.js";
import { Controller } from "../controller/controller.js";
import type { Fence } from "../controller/fence.js";
import type { Informer } from "../controller/informer.js";
import type { ControllerMetrics } from "../server/metrics.js";

/** A Controller reconciling each key with `reconciler`; its queue depth and the caches' sizes go to `metrics`. */
export function buildController({
  config,
  log,
  metrics,
  reconciler,
  fence,
  named,
}: {
  config: Pick<Config, "workers">;
  log: Logger;
  metrics: ControllerMetrics | undefined;
  reconciler: CanaryReconciler;
  fence: Fence | undefined;
  /** The caches by the names their sizes are published under. */
  named: ReadonlyMap<string, Informer<unknown>>;
}): Controller {
  const controller = new Controller({
    name: "canaryapp",
    // Sharded: an app of a share not held is dropped; the replica holding it reconciles it.
    reconcile: fence ? (key) => fence.run(key, () => reconciler.reconcile(key)) : (key) => reconciler.reconcile(key),
    workers: config.workers,
    log,
    ...(metrics ? { hooks: metrics.controllerHooks() } : {}),
  });
  metrics?.setQueueDepthSource(() => controller.queue.len());
  metrics?.setCacheSource(() => Object.fromEntries([...named].map(([name, cache]) => [name, cache.size()])));
  return controller;
}

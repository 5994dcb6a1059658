/**
 * The three ways the controller runs: alone (no leader election), sharded (every replica works on the shares
 * it holds, ADR 0016), or as the one leader behind the sharding epoch's gate (ADR 0024), a standby warm.
 */
import type { Logger } from "pino";
import type { CanaryApp } from "../api/types.js";
import type { Config } from "../config.js";
import type { Controller, Health } from "../controller/controller.js";
import { EpochGate } from "../controller/epoch-gate.js";
import type { Informer } from "../controller/informer.js";
import { LeaderElector, leaseClientFor, type StopReason } from "../controller/leader-election.js";
import type { ShardElector } from "../controller/shard-election.js";
import { objectKey } from "../object-keys.js";
import type { KubeRest } from "../kube/rest.js";
import type { ControllerMetrics } from "../server/metrics.js";
import type { Sharding } from "./sharding.js";

/** A running controller process (minus the HTTP server and signal handling, which main.ts adds). */
export interface RunningController {
  /** Caches synced and, when leading, workers running (a standby is ready once its caches are synced). */
  ready(): boolean;
  /** Liveness: whether the controller can still do its job (see `Controller.health`). */
  health(): Health;
  isLeader(): boolean;
  /** Stops taking work, finishes in-flight reconciles, releases the lease. */
  stop(): Promise<void>;
  /** Resolves when the controller has stopped, with why. */
  done: Promise<StopReason>;
}

/** Without leader election: the one replica works on every app, at once. */
export function runAlone(controller: Controller): RunningController {
  const done = controller.run().then((): StopReason => "shutdown");
  return {
    ready: () => controller.ready(),
    health: () => controller.health(),
    isLeader: () => true,
    stop: () => controller.stop(),
    done,
  };
}

/** Sharded: works at once, on the apps of the shares `shards` wins; publishes what it holds to `metrics`. */
export function runSharded({
  controller,
  shards,
  sharding: { work, fence },
  canaryApps,
  metrics,
}: {
  controller: Controller;
  shards: ShardElector;
  sharding: Pick<Sharding, "work" | "fence">;
  canaryApps: Informer<CanaryApp>;
  metrics: ControllerMetrics | undefined;
}): RunningController {
  metrics?.setShardSource(() => {
    const held = new Set(shards.heldShares());
    const apps = canaryApps.list().filter((app) => {
      const key = objectKey(app);
      return key !== undefined && held.has(fence?.shareOf(key) ?? -1);
    }).length;
    return { shares: held.size, apps, loading: work?.loadingShares().length ?? 0 };
  });
  const running = controller.run();
  shards.start();
  let stopping: Promise<void> | undefined;
  // A graceful stop drains the reconciles in flight while the shares are still held (and renewed), then
  // hands every share over at once.
  const stop = (): Promise<void> =>
    (stopping ??= (async () => {
      await controller.stop();
      await shards.stop();
    })());
  return {
    ready: () => controller.ready(),
    health: () => controller.health(),
    isLeader: () => shards.heldShares().length > 0,
    stop,
    done: running.then(() => stop()).then((): StopReason => "shutdown"),
  };
}

/**
 * One leader, elected on the Lease; unsharded is the one share of count 1 (ADR 0024): it leads only while the
 * sharding epoch is 1. A standby keeps its caches warm: it takes over without a cold start.
 */
export function runLeader({
  api,
  config,
  log,
  controller,
}: {
  api: KubeRest;
  config: Pick<Config, "leaderElection">;
  log: Logger;
  controller: Controller;
}): RunningController {
  const campaign = new AbortController();
  const epoch = new EpochGate({
    namespace: config.leaderElection.namespace,
    name: config.leaderElection.name,
    identity: config.leaderElection.identity,
    client: leaseClientFor(api),
    log,
  });
  const elector = new LeaderElector({
    namespace: config.leaderElection.namespace,
    name: config.leaderElection.name,
    identity: config.leaderElection.identity,
    client: leaseClientFor(api),
    log,
    gate: epoch,
    onStartedLeading: (signal) => controller.run(signal),
    // A lost lease means another replica may already be acting: do not wait for in-flight reconciles to
    // finish their writes; `done` resolves "lost" at once and main.ts exits, so the replica restarts clean.
    // A shutdown, in contrast, drains (the lease is still held and renewed until the drain is over).
    onStoppedLeading: (reason) => (reason === "lost" ? void controller.abandon() : controller.stop()),
  });
  // A standby is ready once its caches are synced.
  controller.startCaches();
  // Stopped gracefully, it leaves the group (its member Lease of count 1) once it has released the lease.
  const done = elector.run(campaign.signal).then(async (reason) => {
    if (reason === "shutdown") await epoch.leave();
    return reason;
  });
  return {
    ready: () => controller.cachesSynced() && (!elector.isLeader() || controller.ready()),
    health: () => controller.health(),
    isLeader: () => elector.isLeader(),
    stop: async () => {
      campaign.abort();
      await done;
      await controller.stop();
    },
    done,
  };
}

/**
 * Sharding (ADR 0016): the share election, the work it lets in, and the fence every write and Event passes.
 * Sharded or not, the writer and the Event sink the reconciler acts through.
 */
import type { Logger } from "pino";
import type { Clock } from "../time/clock.js";
import { fencedEvents, fencedWriter } from "../canary/fenced.js";
import type { ClusterWriter, EventSink, ReconcileObserver } from "../canary/ports.js";
import type { Config } from "../config.js";
import type { Fence } from "../controller/fence.js";
import { leaseClientFor } from "../controller/leader-election.js";
import { ShardElector } from "../controller/shard-election.js";
import { ShardWork, type ShardCache } from "../controller/shard-work.js";
import { clusterWriter, eventSink, type WriteObserver } from "../kube/cluster.js";
import { EventRecorder, eventClientFor } from "../kube/events.js";
import { objectKey, splitKey } from "../object-keys.js";
import type { KubeRest } from "../kube/rest.js";
import type { ControllerMetrics } from "../server/metrics.js";
import type { AppCaches } from "./caches.js";
import { Later, type LateQueue } from "./later.js";

export interface Sharding {
  /** The share election; undefined: not sharded. */
  shards: ShardElector | undefined;
  /** Which apps this replica works on; undefined: not sharded. */
  work: ShardWork | undefined;
  /** What every reconcile, write and Event of a share passes while the share is held; undefined: not sharded. */
  fence: Fence | undefined;
  writer: ClusterWriter;
  events: EventSink;
}

/**
 * Sharded, every replica works, on the apps of the shares it holds a Lease for; its caches keep those apps'
 * objects, and its queue takes their keys (`queue` is the Controller's, made later).
 */
export function buildSharding({
  api,
  config,
  log,
  clock,
  observer,
  metrics,
  sharded,
  caches,
  shardCaches,
  queue,
}: {
  api: KubeRest;
  config: Pick<Config, "leaderElection" | "shards">;
  log: Logger;
  clock: Clock;
  observer: ReconcileObserver;
  metrics: ControllerMetrics | undefined;
  sharded: boolean;
  caches: AppCaches;
  shardCaches: readonly ShardCache[];
  queue: Pick<LateQueue, "add" | "remove">;
}): Sharding {
  const wrote: WriteObserver = (kind, verb) => observer.wrote(kind, verb);
  // The election calls into the work, and the work asks the election for its terms: the work is made second,
  // before the election starts.
  const shardWork = new Later<ShardWork>("the shard work");
  const shards = sharded
    ? new ShardElector({
        namespace: config.leaderElection.namespace,
        name: config.leaderElection.name,
        shares: config.shards,
        identity: config.leaderElection.identity,
        client: leaseClientFor(api),
        log,
        clock,
        onGained: (share) => shardWork.get().gained(share),
        onLost: (share) => shardWork.get().lost(share),
        onResumed: (share) => shardWork.get().resumed(share),
      })
    : undefined;
  const work = shards
    ? shardWork.set(
        new ShardWork({
          shares: config.shards,
          termOf: (share) => shards.term(share),
          queue,
          appKeys: () => caches.canaryApps.list().flatMap((app) => objectKey(app) ?? []),
          caches: shardCaches,
          dropped: (key) => {
            const { namespace, name } = splitKey(key);
            observer.appRemoved(namespace, name);
          },
          log: log.child({ component: "shards" }),
        }),
      )
    : undefined;
  const fence = work?.fence;
  let writer: ClusterWriter = clusterWriter(
    api,
    wrote,
    metrics ? (kind, verb, seconds, ok) => metrics.observeApiRequest(kind, verb, seconds, ok) : undefined,
  );
  let events: EventSink = eventSink(new EventRecorder({ client: eventClientFor(api), log }), wrote);
  if (fence !== undefined) {
    const passed = metrics
      ? (share: number | undefined, result: "ok" | "refused") => metrics.shardWrite(share, result)
      : undefined;
    writer = fencedWriter(writer, fence, passed);
    events = fencedEvents(events, fence, passed);
  }
  return { shards, work, fence, writer, events };
}

import type { Logger } from "pino";
import type { Clock } from "./api/clock.js";
import { systemClock } from "./api/clock.js";
import { LABELS, MANAGED_BY_VALUE, REVISION_LABEL } from "./api/types.js";
import type { CanaryApp } from "./api/types.js";
import type { ReconcileObserver } from "./canary/ports.js";
import { AnalysisRuns } from "./canary/analysis-runs.js";
import { CanaryReconciler } from "./canary/reconciler.js";
import { DEFAULTS } from "./api/defaults.js";
import type { Config } from "./config.js";
import { Controller, type Health } from "./controller/controller.js";
import type { Informer, ObjectWithMeta } from "./controller/informer.js";
import { createInformer } from "./controller/informer.js";
import { keyFromLabel, objectKey, splitKey, type KeyedObject } from "./kube/keys.js";
import type { StopReason } from "./controller/leader-election.js";
import { EpochGate } from "./controller/epoch-gate.js";
import { LeaderElector, leaseClientFor } from "./controller/leader-election.js";
import { ShardElector } from "./controller/shard-election.js";
import { ShardWork, type ShardCache } from "./controller/shard-work.js";
import { shareLabelValue, shareOf, shareSelector } from "./controller/shards.js";
import { fencedEvents, fencedWriter } from "./canary/fenced.js";
import type { ClusterWriter, EventSink } from "./canary/ports.js";
import type { WriteObserver } from "./kube/cluster.js";
import { clusterWriter, eventSink } from "./kube/cluster.js";
import { EventRecorder, eventClientFor } from "./kube/events.js";
import type { KindInfo } from "./kube/kinds.js";
import { CANARY_APPS, CHILD_KINDS, PODS } from "./kube/kinds.js";
import { KubeRest } from "./kube/rest.js";
import { controllerUserAgent } from "./kube/user-agent.js";
import { ProviderPool } from "./metrics/factory.js";
import { prometheusAnalysis } from "./metrics/prometheus-analysis.js";
import { analysisByMode } from "./metrics/by-mode.js";
import { webhookAnalysis, webhookDeadlineMs, webhookRefusal } from "./webhooks/analysis.js";
import { DEFAULT_WEBHOOK_TIMEOUT_SECONDS } from "./rollout/checks.js";
import { NotificationDeliveries } from "./notify/deliveries.js";
import { hasReceivers, NOTIFICATION_REFUSED, noticeSender } from "./notify/sender.js";
import { appsUsingSecret, prometheusAccess } from "./metrics/access.js";
import { serviceLookup, ServiceVerdicts } from "./metrics/services.js";
import { webhookDestinations } from "./webhooks/destinations.js";
import { PostLimiter } from "./webhooks/rate-limit.js";
import { credentialSecretsInformer } from "./metrics/credential-secrets.js";
import { istioRouter } from "./router/istio.js";
import { parseRoutePolicy, routeRefusal } from "./router/host-policy.js";
import { clashCandidates } from "./resources/ownership.js";
import type { ControllerMetrics } from "./server/metrics.js";
import { deploymentTarget } from "./workload/deployment.js";

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

export interface StartOptions {
  config: Config;
  log: Logger;
  observer: ReconcileObserver;
  /** Receives reconcile durations and the queue depth. */
  metrics?: ControllerMetrics;
  clock?: Clock;
}

const CHILD_SELECTOR = `${LABELS.managedBy}=${MANAGED_BY_VALUE}`;

/** The host (and port) of a Prometheus URL: what the analyses in flight are bounded by. */
function prometheusHost(url: string | undefined): string {
  if (url === undefined) return "";
  try {
    return new URL(url).host;
  } catch {
    return url;
  }
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
  // Sharded, each cache keeps only the objects of the apps in the shares this replica holds (ADR 0016):
  // `keyOf` names the app an object belongs to. The ShardWork exists by the time the informers start.
  const informer = <T extends ObjectWithMeta>(
    kind: KindInfo<T>,
    keyOf: (obj: T) => string | undefined,
    labelSelector?: string,
    labelled?: (obj: T) => boolean,
  ): Informer<T> =>
    createInformer<T>({
      type: kind,
      namespaces: config.namespaces,
      labelSelector,
      list: (args) => kind.list(api, args),
      watcher: api,
      log: log.child({ informer: kind.plural }),
      ...(kind.trim !== undefined ? { transform: kind.trim } : {}),
      ...(sharded ? { keep: (obj: T) => work?.keepsKey(keyOf(obj)) ?? false } : {}),
      ...(sharded && labelled !== undefined ? { labelled } : {}),
    });
  const appOfChild = keyFromLabel(LABELS.app);
  // A child a share is loaded by: labelled with its app's share under the current share count (one written
  // unsharded, or under another count, is not; an object of no app needs no load, it is always kept).
  const shareLabelled = (child: KeyedObject): boolean => {
    const key = appOfChild(child);
    return (
      key === undefined ||
      child.metadata?.labels?.[LABELS.share] === shareLabelValue(shareOf(key, config.shards), config.shards)
    );
  };

  const caches = {
    canaryApps: informer(CANARY_APPS, objectKey),
    children: new Map(
      CHILD_KINDS.map((kind) => [kind.kind, informer(kind, appOfChild, CHILD_SELECTOR, shareLabelled)]),
    ),
    // Only the secondaries' pods: the digest under test is read from them (ADR 0011).
    secondaryPods: informer(PODS, appOfChild, `${CHILD_SELECTOR},${LABELS.track}=secondary`),
    // A StatefulSet's pods, which carry their revision instead of a track (ADR 0015).
    statefulSetPods: informer(PODS, appOfChild, `${CHILD_SELECTOR},${REVISION_LABEL}`),
  };
  // Every cache of app objects, by the name its size is published under (canaryapp_cached_objects).
  const namedCaches = new Map<string, Informer<unknown>>([
    ["canaryapps", caches.canaryApps],
    ...[...caches.children].map(([kind, cache]): [string, Informer<unknown>] => [kind.toLowerCase(), cache]),
    ["secondary-pods", caches.secondaryPods],
    ["statefulset-pods", caches.statefulSetPods],
  ]);
  // A share gained is loaded by its label where the controller writes one (the children it applies); the
  // CanaryApps (the user's objects) and pods (labelled by their template) carry none, and are listed whole.
  const byShareLabel = new Set<Informer<unknown>>(caches.children.values());
  const shardCaches = [...namedCaches.values()].map((cache): ShardCache => ({
    load: (shares) =>
      cache.load?.(byShareLabel.has(cache) ? shareSelector(LABELS.share, shares, config.shards) : undefined) ??
      Promise.resolve(),
    prune: () => cache.prune?.(),
  }));
  // Only Secrets labelled as credentials (Prometheus', notification URLs) are listed, cached and used.
  const secrets = credentialSecretsInformer(api, api, config.namespaces, log.child({ informer: "secrets" }));
  // What a Service name an app chose reaches: each Service read when first needed; an app that asked is
  // judged again when its verdict is learned or changes. The controller exists by the time one is.
  const services = new ServiceVerdicts({
    lookup: serviceLookup(api),
    now: () => clock.now(),
    changed: (keys) => {
      for (const key of keys) requeue(key);
    },
    failed: (service, err) => log.warn({ service, err }, "could not read a Service an app names; asking again later"),
  });
  const access = prometheusAccess({
    policyEntries: config.prometheusURLPolicy,
    defaultPrometheusURL: config.defaultPrometheusURL,
    secrets,
    services,
    allowPlainHttpCredentials: config.allowPlainHttpCredentials,
  });
  const destinations = webhookDestinations({
    entries: config.webhookURLPolicy,
    ownPrometheusURL: config.defaultPrometheusURL,
    services,
  });
  const posts = new PostLimiter({ now: () => clock.now() });
  const routePolicy = parseRoutePolicy(config.allowedHosts, config.allowedGateways);
  const wrote: WriteObserver = (kind, verb) => observer.wrote(kind, verb);
  // Sharded (ADR 0016): every replica works, on the apps of the shares it holds a Lease for. The controller
  // exists by the time the first round ends.
  const shards = sharded
    ? new ShardElector({
        namespace: config.leaderElection.namespace,
        name: config.leaderElection.name,
        shares: config.shards,
        identity: config.leaderElection.identity,
        client: leaseClientFor(api),
        log,
        clock,
        onGained: (share) => work?.gained(share),
        onLost: (share) => work?.lost(share),
        onResumed: (share) => work?.resumed(share),
      })
    : undefined;
  const work = shards
    ? new ShardWork({
        shares: config.shards,
        termOf: (share) => shards.term(share),
        queue: { add: (key) => controller.queue.add(key), remove: (key) => controller.queue.remove(key) },
        appKeys: () => caches.canaryApps.list().flatMap((app) => objectKey(app) ?? []),
        caches: shardCaches,
        dropped: (key) => {
          const { namespace, name } = splitKey(key);
          observer.appRemoved(namespace, name);
        },
        log: log.child({ component: "shards" }),
      })
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
  const reconciler = new CanaryReconciler({
    caches,
    writer,
    events,
    analyses: new AnalysisRuns({
      // Webhook checks (rollout webhooks, gates) go to their URLs; every other check is PromQL.
      provider: analysisByMode(
        { webhook: webhookAnalysis({ destinations, limiter: posts }) },
        prometheusAnalysis({
          defaults: {
            prometheusURL: config.defaultPrometheusURL,
            log: log.child({ component: "prometheus" }),
            vet: access.check,
            allowRedirect: access.allowRedirect,
            credentialsMayGo: access.credentialsMayGo,
          },
          readSecret: access.readSecret,
          pool: new ProviderPool(),
        }),
      ),
      // The controller exists by the time any analysis ends.
      requeue: (key) => controller.queue.add(key),
      hostOf: (app) => prometheusHost(app.spec.prometheusURL ?? config.defaultPrometheusURL),
      deadlineMs: (app) =>
        Math.max(
          (app.spec.prometheus?.timeoutSeconds ?? DEFAULTS.prometheusTimeoutSeconds) * 1000,
          webhookDeadlineMs(app, DEFAULT_WEBHOOK_TIMEOUT_SECONDS),
        ),
      clock,
      log: log.child({ component: "analysis" }),
    }),
    notices: {
      deliveries: new NotificationDeliveries({
        send: noticeSender({
          readSecret: access.readSecret,
          destinations,
          allowPlainHttpCredentials: config.allowPlainHttpCredentials,
          limiter: posts,
          skipped: (app, message) =>
            void events.record(app, { type: "Warning", reason: NOTIFICATION_REFUSED, message }).catch(() => undefined),
          controllerURL: config.notificationURL,
          log: log.child({ component: "notifications" }),
        }),
        requeue: (key) => controller.queue.add(key),
        clock,
        log: log.child({ component: "notifications" }),
      }),
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
    vetPrometheus: (app) => access.vet(app) ?? webhookRefusal(app, destinations),
    vetRoute: (app) => routeRefusal(app, routePolicy),
    router: istioRouter,
    workload: deploymentTarget,
    observer,
    log,
    clock,
  });

  const controller = new Controller({
    name: "canaryapp",
    // Sharded: an app of a share not held is dropped; the replica holding it reconciles it.
    reconcile: fence ? (key) => fence.run(key, () => reconciler.reconcile(key)) : (key) => reconciler.reconcile(key),
    workers: config.workers,
    log,
    ...(metrics ? { hooks: metrics.controllerHooks() } : {}),
  });
  metrics?.setQueueDepthSource(() => controller.queue.len());
  metrics?.setCacheSource(() => Object.fromEntries([...namedCaches].map(([name, cache]) => [name, cache.size()])));
  // Sharded, only the apps of held shares are queued; the others' events are for the replicas holding them
  // (or, for a share of this replica not usable now, remembered until it is: ShardWork).
  const owned =
    <T>(keyOf: (obj: T) => string | undefined) =>
    (obj: T): string | undefined => {
      const key = keyOf(obj);
      return key !== undefined && (work === undefined || work.accepts(key)) ? key : undefined;
    };
  controller.watch(caches.canaryApps, owned(objectKey));
  for (const child of caches.children.values()) controller.watch(child, owned(keyFromLabel(LABELS.app)));
  // The reconciler skips a child whose write its cache has not shown yet; any event of the child ends that.
  for (const [kind, cache] of caches.children) {
    const seen = (obj: ObjectWithMeta): void => reconciler.childSeen(kind, obj);
    cache.onAdd(seen);
    cache.onUpdate(seen);
    cache.onDelete(seen);
  }
  controller.watch(caches.secondaryPods, owned(keyFromLabel(LABELS.app)));
  controller.watch(caches.statefulSetPods, owned(keyFromLabel(LABELS.app)));
  // A stranded pod the reconciler deleted is not planned again before the cache shows its deletion.
  const podSeen = (obj: ObjectWithMeta): void => reconciler.childSeen("Pod", obj);
  caches.statefulSetPods.onUpdate(podSeen);
  caches.statefulSetPods.onDelete(podSeen);
  /** Judges an app again: queued here, or, sharded, offered to the share's work (held or remembered). */
  function requeue(key: string): void {
    if (work === undefined) controller.queue.add(key);
    else work.offer(key);
  }
  // An app removed frees its names: an app refused for wanting one of them (NameTaken) is judged again.
  caches.canaryApps.onDelete((app) => {
    const namespace = app.metadata.namespace ?? "";
    for (const name of clashCandidates(app.metadata.name ?? "")) {
      if (caches.canaryApps.get(namespace, name) !== undefined) requeue(`${namespace}/${name}`);
    }
  });
  // A credentials Secret labelled, changed or removed: its apps are judged again.
  controller.addCache(secrets);
  const requeueUsers = (secret: Parameters<typeof appsUsingSecret>[1]): void => {
    const namespace = secret.metadata?.namespace;
    for (const key of appsUsingSecret(caches.canaryApps.list(namespace), secret)) requeue(key);
  };
  secrets.onAdd(requeueUsers);
  secrets.onUpdate(requeueUsers);
  secrets.onDelete(requeueUsers);

  if (!config.leaderElection.enabled) {
    const done = controller.run().then((): StopReason => "shutdown");
    return {
      ready: () => controller.ready(),
      health: () => controller.health(),
      isLeader: () => true,
      stop: () => controller.stop(),
      done,
    };
  }

  if (shards !== undefined) {
    metrics?.setShardSource(() => {
      const held = new Set(shards.heldShares());
      const apps = caches.canaryApps.list().filter((app) => {
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

  const campaign = new AbortController();
  // Unsharded is the one share of count 1 (ADR 0024): it leads only while the sharding epoch is 1.
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
  // A standby keeps its caches warm: it takes over without a cold start, and is ready once they are synced.
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

/**
 * The informer caches of the apps' objects: the CanaryApps, their children by kind and two sets of pods; the
 * names their sizes are published under; and, sharded, how each is loaded when a share is gained (ADR 0016).
 */
import type { KubernetesObject } from "@kubernetes/client-node";
import type { Logger } from "pino";
import { LABELS, MANAGED_BY_VALUE, REVISION_LABEL, type CanaryAnalysisTemplate, type CanaryApp } from "../api/types.js";
import type { Config } from "../config.js";
import { createInformer } from "../controller/create-informer.js";
import { ServedInformer } from "../controller/served-informer.js";
import type { Informer, ObjectWithMeta } from "../controller/informer.js";
import type { ShardCache, ShardWork } from "../controller/shard-work.js";
import { shareLabelValue, shareOf, shareSelector } from "../controller/shards.js";
import { keyFromLabel, objectKey, type KeyedObject } from "../object-keys.js";
import { servesResource } from "../kube/discovery.js";
import {
  ANALYSIS_TEMPLATES,
  CANARY_APPS,
  CHILD_KINDS,
  CLUSTER_ANALYSIS_TEMPLATES,
  HTTP_ROUTES,
  PODS,
  type KindInfo,
} from "../kube/kinds.js";
import type { KubeRest } from "../kube/rest.js";
import type { Later } from "./later.js";

const CHILD_SELECTOR = `${LABELS.managedBy}=${MANAGED_BY_VALUE}`;

/** What the reconciler reads and the controller watches. */
export interface AppCaches {
  canaryApps: Informer<CanaryApp>;
  /** The children's caches by kind ("Deployment", "VirtualService"...). */
  children: Map<string, Informer<KubernetesObject>>;
  /** Only the secondaries' pods: the digest under test is read from them (ADR 0011). */
  secondaryPods: Informer<KubernetesObject>;
  /** A StatefulSet's pods, which carry their revision instead of a track (ADR 0015). */
  statefulSetPods: Informer<KubernetesObject>;
  /**
   * The analysis templates (ADR 0031), each watched where the cluster serves its kind: CanaryAnalysisTemplates
   * in the watched namespaces, ClusterCanaryAnalysisTemplates cluster-wide. Every replica keeps all of them
   * (a template is not an app's: any share's app may use it).
   */
  analysisTemplates: {
    namespaced: ServedInformer<CanaryAnalysisTemplate>;
    cluster: ServedInformer<CanaryAnalysisTemplate>;
  };
}

export interface CacheSet {
  caches: AppCaches;
  /** Every cache of app objects, by the name its size is published under (canaryapp_cached_objects). */
  named: Map<string, Informer<unknown>>;
  /** Each cache as the shard work loads and prunes it. */
  shardCaches: ShardCache[];
}

/**
 * Whether a share loads `child` by its label: it is labelled with its app's share under the current share count
 * (one written unsharded, or under another count, is not; an object of no app needs no load, it is always kept).
 */
export function shareLabelled(shards: number): (child: KeyedObject) => boolean {
  const appOfChild = keyFromLabel(LABELS.app);
  return (child) => {
    const key = appOfChild(child);
    return (
      key === undefined || child.metadata?.labels?.[LABELS.share] === shareLabelValue(shareOf(key, shards), shards)
    );
  };
}

/**
 * The caches of the app objects in `config.namespaces`. Sharded, each keeps only the objects of the apps in the
 * shares `work` holds: `work` is set by the time the informers start.
 */
export function buildCaches({
  api,
  config,
  log,
  sharded,
  work,
}: {
  api: KubeRest;
  config: Pick<Config, "namespaces" | "shards">;
  log: Logger;
  sharded: boolean;
  work: Later<ShardWork | undefined>;
}): CacheSet {
  // `keyOf` names the app an object belongs to.
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
      ...(sharded ? { keep: (obj: T) => work.get()?.keepsKey(keyOf(obj)) ?? false } : {}),
      ...(sharded && labelled !== undefined ? { labelled } : {}),
    });
  const appOfChild = keyFromLabel(LABELS.app);
  const labelledWithShare = shareLabelled(config.shards);

  const child = (kind: KindInfo<KubernetesObject>) => informer(kind, appOfChild, CHILD_SELECTOR, labelledWithShare);
  // The HTTPRoutes of `mesh: gateway-api` are watched where the cluster serves them; elsewhere their cache is
  // empty and asks nothing, and an app that needs them is told so (canary/app-ports.ts routerMissing).
  const httpRoutes = new ServedInformer<KubernetesObject>({
    isServed: () => servesResource(api, HTTP_ROUTES, log),
    make: () => child(HTTP_ROUTES),
    log: log.child({ informer: HTTP_ROUTES.plural }),
  });
  // A template CRD not installed costs nothing: its cache stays empty and asks nothing, and an app that names a
  // template of that kind is told so (AnalysisReady: TemplatesNotServed).
  const templates = (kind: KindInfo<CanaryAnalysisTemplate>, namespaces: readonly string[]) =>
    new ServedInformer<CanaryAnalysisTemplate>({
      isServed: () => servesResource(api, kind, log),
      make: () =>
        createInformer<CanaryAnalysisTemplate>({
          type: kind,
          namespaces,
          list: (args) => kind.list(api, args),
          watcher: api,
          log: log.child({ informer: kind.plural }),
        }),
      log: log.child({ informer: kind.plural }),
    });
  const caches: AppCaches = {
    canaryApps: informer(CANARY_APPS, objectKey),
    children: new Map<string, Informer<KubernetesObject>>([
      ...CHILD_KINDS.map((kind): [string, Informer<KubernetesObject>] => [kind.kind, child(kind)]),
      [HTTP_ROUTES.kind, httpRoutes],
    ]),
    secondaryPods: informer(PODS, appOfChild, `${CHILD_SELECTOR},${LABELS.track}=secondary`),
    statefulSetPods: informer(PODS, appOfChild, `${CHILD_SELECTOR},${REVISION_LABEL}`),
    analysisTemplates: {
      namespaced: templates(ANALYSIS_TEMPLATES, config.namespaces),
      // Cluster-scoped: one watch, whatever namespaces the controller is limited to.
      cluster: templates(CLUSTER_ANALYSIS_TEMPLATES, []),
    },
  };
  const named = new Map<string, Informer<unknown>>([
    ["canaryapps", caches.canaryApps],
    ...[...caches.children].map(([kind, cache]): [string, Informer<unknown>] => [kind.toLowerCase(), cache]),
    ["secondary-pods", caches.secondaryPods],
    ["statefulset-pods", caches.statefulSetPods],
  ]);
  // A share gained is loaded by its label where the controller writes one (the children it applies); the
  // CanaryApps (the user's objects) and pods (labelled by their template) carry none, and are listed whole.
  const byShareLabel = new Set<Informer<unknown>>(caches.children.values());
  const shardCaches = [...named.values()].map((cache): ShardCache => ({
    load: (shares) =>
      cache.load?.(byShareLabel.has(cache) ? shareSelector(LABELS.share, shares, config.shards) : undefined) ??
      Promise.resolve(),
    prune: () => cache.prune?.(),
  }));
  return { caches, named, shardCaches };
}

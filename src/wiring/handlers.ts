/**
 * What the caches' events do: queue the key of the app an object belongs to, tell the reconciler a child's
 * write is seen, and judge again the apps a removed app or a credentials Secret concerns.
 */
import type { CanaryReconciler } from "../canary/reconciler.js";
import type { Controller } from "../controller/controller.js";
import type { Informer, ObjectWithMeta } from "../controller/informer.js";
import type { ShardWork } from "../controller/shard-work.js";
import { keyFromLabel, objectKey } from "../object-keys.js";
import { LABELS } from "../api/types.js";
import { appsUsingSecret } from "../analysis/providers/prometheus/access.js";
import type { CredentialSecret } from "./credential-secrets.js";
import { clashCandidates } from "../resources/ownership.js";
import type { AppCaches } from "./caches.js";
import type { LateQueue } from "./later.js";
import { TemplateUsers } from "./template-users.js";

/** Registers the caches with `controller` and their handlers, in the order they are called. */
export function watchAppObjects({
  controller,
  caches,
  secrets,
  reconciler,
  work,
  queue,
}: {
  controller: Controller;
  caches: AppCaches;
  secrets: Informer<CredentialSecret>;
  reconciler: CanaryReconciler;
  /** Sharded: which apps this replica works on; undefined: all. */
  work: ShardWork | undefined;
  queue: Pick<LateQueue, "requeue">;
}): void {
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
  // An app removed frees its names: an app refused for wanting one of them (NameTaken) is judged again.
  caches.canaryApps.onDelete((app) => {
    const namespace = app.metadata.namespace ?? "";
    for (const name of clashCandidates(app.metadata.name ?? "")) {
      if (caches.canaryApps.get(namespace, name) !== undefined) queue.requeue(`${namespace}/${name}`);
    }
  });
  // A credentials Secret labelled, changed or removed: its apps are judged again.
  controller.addCache(secrets);
  const requeueUsers = (secret: CredentialSecret): void => {
    const namespace = secret.metadata?.namespace;
    for (const key of appsUsingSecret(caches.canaryApps.list(namespace), secret)) queue.requeue(key);
  };
  secrets.onAdd(requeueUsers);
  secrets.onUpdate(requeueUsers);
  secrets.onDelete(requeueUsers);
  // A template added, changed or removed: the apps that name it are judged again (ADR 0031), found by an index
  // the apps' own events keep. A running test is not changed by it (its metrics are recorded), the next is.
  const templateUsers = new TemplateUsers();
  caches.canaryApps.onAdd((app) => templateUsers.set(app));
  caches.canaryApps.onUpdate((app) => templateUsers.set(app));
  caches.canaryApps.onDelete((app) => templateUsers.remove(app));
  for (const [kind, cache] of [
    ["CanaryAnalysisTemplate", caches.analysisTemplates.namespaced],
    ["ClusterCanaryAnalysisTemplate", caches.analysisTemplates.cluster],
  ] as const) {
    controller.addCache(cache);
    const requeue = (template: ObjectWithMeta): void => {
      for (const key of templateUsers.of(kind, template))
        if (work === undefined || work.accepts(key)) queue.requeue(key);
    };
    cache.onAdd(requeue);
    cache.onUpdate(requeue);
    cache.onDelete(requeue);
  }
}

import { appRef, childNames } from "../api/meta.js";
import type { CanaryApp } from "../api/types.js";
import type { TemplateLookup, TemplateResolution } from "../analysis/template-resolution.js";
import { resolveTemplates } from "../analysis/template-resolution.js";
import type { TrafficRouter } from "../router/router.js";
import { LABELS, REVISION_LABEL } from "../api/types.js";
import type { Observation, PodObservation } from "../rollout/types.js";
import type { AnyWorkloadTarget } from "../workload/workload.js";
import { isShared } from "../workload/workload.js";
import type { Caches } from "./ports.js";
import { childCache } from "./ports.js";

/** What the world looks like for one app, read from the informer caches only, through the two ports. */
export function observe(
  app: CanaryApp,
  caches: Caches,
  router: TrafficRouter,
  workload: AnyWorkloadTarget,
): Omit<Observation, "analysis"> {
  const { name, namespace } = appRef(app);
  const names = childNames(name);
  const workloads = childCache(caches, workload.kind);
  const stale = staleRoute(app, caches, router);
  if (isShared(workload)) {
    // One object for both tracks: the secondary's pods are those of the revision under test.
    const statefulSet = workloads.get(namespace, workload.objectName(app));
    const { primary, secondary, status } = workload.observe(statefulSet);
    const revision = secondary?.revision;
    return {
      primary,
      secondary,
      ...routed(app, caches, router),
      ...(caches.statefulSetPods !== undefined && revision !== undefined
        ? {
            secondaryPods: observePods(caches.statefulSetPods.list(namespace), name, workload.appContainer, {
              [REVISION_LABEL]: revision,
            }),
          }
        : {}),
      ...(status !== undefined ? { workload: status } : {}),
      ...(stale !== undefined ? { staleRoute: stale } : {}),
      ...(caches.statefulSetPods !== undefined
        ? { setPods: workload.setPods(statefulSet, caches.statefulSetPods.list(namespace), name) }
        : {}),
    };
  }
  const primary = workload.observe(workloads.get(namespace, names.primary));
  const secondary = workload.observe(workloads.get(namespace, names.secondary));
  return {
    primary,
    secondary,
    ...(router.splitByPods !== undefined
      ? { routedWeights: router.splitByPods(primary, secondary) }
      : routed(app, caches, router)),
    ...(caches.secondaryPods !== undefined
      ? { secondaryPods: observePods(caches.secondaryPods.list(namespace), name, workload.appContainer) }
      : {}),
    ...(stale !== undefined ? { staleRoute: stale } : {}),
  };
}

interface PodLike {
  metadata?: { labels?: Record<string, string>; deletionTimestamp?: unknown };
  spec?: { containers?: { name?: string; image?: string }[] };
  status?: {
    conditions?: { type?: string; status?: string }[];
    containerStatuses?: { name?: string; imageID?: string }[];
  };
}

/**
 * The app's secondary pods: the app container's image and imageID, and whether the pod is ready. They are
 * told by their track label, or by `match` (labels) when the workload tells them apart otherwise.
 */
export function observePods(
  pods: readonly unknown[],
  app: string,
  container: string,
  match: Record<string, string> = { [LABELS.track]: "secondary" },
): PodObservation[] {
  const out: PodObservation[] = [];
  for (const object of pods) {
    const pod = object as PodLike;
    const labels = pod.metadata?.labels ?? {};
    if (labels[LABELS.app] !== app || Object.entries(match).some(([k, v]) => labels[k] !== v)) continue;
    const image = pod.spec?.containers?.find((c) => c.name === container)?.image ?? "";
    const imageID = pod.status?.containerStatuses?.find((c) => c.name === container)?.imageID ?? "";
    const ready =
      pod.metadata?.deletionTimestamp === undefined &&
      (pod.status?.conditions ?? []).some((c) => c.type === "Ready" && c.status === "True");
    out.push({ image, imageID, ready });
  }
  return out;
}

/**
 * The split the app's routing object carries, and, where its implementation reports on it, why it does not
 * carry it as it now is (`routeNotCarried`).
 */
function routed(
  app: CanaryApp,
  caches: Caches,
  router: TrafficRouter,
): Pick<Observation, "routedWeights" | "routeNotCarried" | "routeCarried"> {
  const name = router.objectName(app);
  const object = childCache(caches, router.kind).get(appRef(app).namespace, name);
  const acceptance = object !== undefined ? router.acceptance?.(object) : undefined;
  return {
    routedWeights: router.routedWeights(object),
    ...(acceptance !== undefined && !acceptance.carried
      ? { routeNotCarried: { reason: acceptance.reason, message: acceptance.message } }
      : {}),
    ...(acceptance?.carried === true ? { routeCarried: true as const } : {}),
  };
}

/** A routing object another router left for this app, if one is (see Observation.staleRoute); one at a time. */
function staleRoute(app: CanaryApp, caches: Caches, router: TrafficRouter): Observation["staleRoute"] {
  for (const leftover of router.leftovers ?? []) {
    if (!caches.children.has(leftover.kind)) continue;
    const object = childCache(caches, leftover.kind).get(appRef(app).namespace, leftover.name(app));
    if (object !== undefined) return { kind: leftover.kind, ...leftover.read(object) };
  }
  return undefined;
}

/**
 * What the app's analysis templates resolve to, from the template caches (ADR 0031); undefined when it names
 * none. A kind the API server does not serve is said so, not taken for a missing template.
 */
export function observeTemplates(app: CanaryApp, caches: Caches): TemplateResolution | undefined {
  const templates = caches.analysisTemplates;
  const lookup: TemplateLookup = ({ kind, namespace, name }) => {
    if (templates === undefined) return undefined;
    const cache = kind === "CanaryAnalysisTemplate" ? templates.namespaced : templates.cluster;
    if (cache.served?.() === false) return "notServed";
    return cache.get(namespace ?? "", name);
  };
  return resolveTemplates(app, lookup);
}

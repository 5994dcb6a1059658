/**
 * What the mesh's data plane would know about each CanaryApp, read from the objects in the API server:
 * the mesh route's weights (from the VirtualService as it is, never from the controller's intent), and
 * the Ready pods of each subset with their images. Pure: the objects come in as plain data.
 */
import { LABELS, MANAGED_BY_VALUE, type Track } from "../../src/api/types.js";
import { destinationTrack } from "../../src/router/istio.js";

/** The fields of any object that are read here. */
export interface ObjectMetaLike {
  name?: string;
  namespace?: string;
  labels?: Record<string, string>;
  deletionTimestamp?: string | Date;
}

export interface VirtualServiceLike {
  metadata?: ObjectMetaLike;
  spec?: {
    gateways?: string[];
    http?: {
      name?: string;
      match?: { gateways?: string[] }[];
      route?: { destination?: { host?: string; subset?: string }; weight?: number }[];
    }[];
  };
}

export interface PodLike {
  metadata?: ObjectMetaLike;
  spec?: { containers?: { name?: string; image?: string }[] };
  status?: { conditions?: { type?: string; status?: string }[] };
}

export interface ServiceLike {
  metadata?: ObjectMetaLike;
  spec?: { selector?: Record<string, string> };
}

export interface DeploymentLike {
  metadata?: ObjectMetaLike;
  spec?: { selector?: { matchLabels?: Record<string, string> } };
}

/** Everything the simulator reads from the cluster at one moment. */
export interface ClusterSnapshot {
  virtualServices: readonly VirtualServiceLike[];
  pods: readonly PodLike[];
  deployments: readonly DeploymentLike[];
  /** The controller's Services; absent: none read (callers outside the mesh then reach nothing). */
  services?: readonly ServiceLike[];
}

export const TRACKS: readonly Track[] = ["primary", "secondary"];

/** The container whose image a pod runs: the one the controller names `app`, else the first. */
const APP_CONTAINER = "app";
const MESH = "mesh";

export interface PodView {
  name: string;
  track: Track;
  image: string;
}

export interface TrackView {
  /** The Deployment the pods belong to: Istio's destination_workload. */
  workload: string;
  readyPods: PodView[];
}

export interface AppView {
  namespace: string;
  name: string;
  /**
   * The weights of the VirtualService's mesh route, by subset. null when there is no VirtualService or it
   * has no route for mesh traffic: then, as in Istio, the Service's round robin over every Ready pod applies.
   */
  weights: Record<Track, number> | null;
  tracks: Record<Track, TrackView>;
  /**
   * The Ready pods the app's Service `<name>` selects: where a caller without a sidecar lands (kube-proxy
   * picks among the Service's ready endpoints; no VirtualService applies to it).
   */
  servicePods: PodView[];
}

/** The app a child belongs to, when it is one of the controller's children. */
function appOf(meta: ObjectMetaLike | undefined): { namespace: string; name: string } | undefined {
  const labels = meta?.labels ?? {};
  const name = labels[LABELS.app];
  if (!name || labels[LABELS.managedBy] !== MANAGED_BY_VALUE || !meta?.namespace) return undefined;
  return { namespace: meta.namespace, name };
}

function trackOf(meta: ObjectMetaLike | undefined): Track | undefined {
  const track = meta?.labels?.[LABELS.track];
  return track === "primary" || track === "secondary" ? track : undefined;
}

/** Ready=True and not terminating: what makes an endpoint receive traffic. */
export function isPodReady(pod: PodLike): boolean {
  if (pod.metadata?.deletionTimestamp) return false;
  return (pod.status?.conditions ?? []).some((c) => c.type === "Ready" && c.status === "True");
}

export function podImage(pod: PodLike): string {
  const containers = pod.spec?.containers ?? [];
  return (containers.find((c) => c.name === APP_CONTAINER) ?? containers[0])?.image ?? "";
}

/**
 * The weights by subset of the first HTTP route that carries mesh traffic: the VirtualService must be
 * bound to `mesh` (explicitly, or by listing no gateways), and the route must have no match or a match
 * that applies to `mesh` (match conditions other than gateways are not evaluated: simulated requests
 * match them all). A destination is a track by its subset or by its host (`<name>-primary`...). A lone
 * destination without a weight takes everything, as in Istio. Other destinations are ignored. null when
 * no route applies.
 */
export function meshWeights(vs: VirtualServiceLike): Record<Track, number> | null {
  const gateways = vs.spec?.gateways ?? [];
  if (gateways.length > 0 && !gateways.includes(MESH)) return null;
  for (const route of vs.spec?.http ?? []) {
    const matches = route.match ?? [];
    const forMesh =
      matches.length === 0 || matches.some((m) => !m.gateways || m.gateways.length === 0 || m.gateways.includes(MESH));
    if (!forMesh) continue;
    const destinations = route.route ?? [];
    const weights: Record<Track, number> = { primary: 0, secondary: 0 };
    for (const d of destinations) {
      // A subset of the app's host, or the per-track Service as the host (ADR 0010).
      const track = destinationTrack(d.destination);
      if (track === undefined) continue;
      weights[track] += d.weight ?? (destinations.length === 1 ? 100 : 0);
    }
    return weights;
  }
  return null;
}

function matchesSelector(labels: Record<string, string>, selector: Record<string, string> | undefined): boolean {
  if (!selector || Object.keys(selector).length === 0) return false;
  return Object.entries(selector).every(([k, v]) => labels[k] === v);
}

/** One view per app that has any labelled child, sorted by namespace and name. */
export function buildAppViews(snapshot: ClusterSnapshot): AppView[] {
  const apps = new Map<string, AppView>();
  const viewOf = (ref: { namespace: string; name: string }): AppView => {
    const key = `${ref.namespace}/${ref.name}`;
    let view = apps.get(key);
    if (!view) {
      const track = (t: Track): TrackView => ({ workload: `${ref.name}-${t}`, readyPods: [] });
      view = {
        ...ref,
        weights: null,
        tracks: { primary: track("primary"), secondary: track("secondary") },
        servicePods: [],
      };
      apps.set(key, view);
    }
    return view;
  };

  for (const vs of sortByName(snapshot.virtualServices)) {
    const ref = appOf(vs.metadata);
    if (!ref) continue;
    const view = viewOf(ref);
    // With several labelled VirtualServices (there should be one), the first by name is used.
    view.weights ??= meshWeights(vs);
  }
  const deployments = sortByName(snapshot.deployments);
  for (const d of deployments) {
    const ref = appOf(d.metadata);
    const track = trackOf(d.metadata);
    if (ref && track && d.metadata?.name) viewOf(ref).tracks[track].workload = d.metadata.name;
  }
  // The app's Service is named as the app; the per-track Services are destinations of the mesh route only.
  const appServices = new Map<string, Record<string, string> | undefined>();
  for (const svc of snapshot.services ?? []) {
    const ref = appOf(svc.metadata);
    if (ref && svc.metadata?.name === ref.name) appServices.set(`${ref.namespace}/${ref.name}`, svc.spec?.selector);
  }
  for (const pod of sortByName(snapshot.pods)) {
    const ref = appOf(pod.metadata);
    const track = trackOf(pod.metadata);
    if (!ref || !track) continue;
    const view = viewOf(ref);
    if (!isPodReady(pod)) continue;
    // The workload is the Deployment that selects the pod (Istio derives it from the pod's owners).
    const labels = pod.metadata?.labels ?? {};
    const owner = deployments.find(
      (d) => d.metadata?.namespace === ref.namespace && matchesSelector(labels, d.spec?.selector?.matchLabels),
    );
    if (owner?.metadata?.name) view.tracks[track].workload = owner.metadata.name;
    const podView = { name: pod.metadata?.name ?? "", track, image: podImage(pod) };
    view.tracks[track].readyPods.push(podView);
    if (matchesSelector(labels, appServices.get(`${ref.namespace}/${ref.name}`))) view.servicePods.push(podView);
  }
  return [...apps.values()].sort((a, b) =>
    a.namespace === b.namespace ? a.name.localeCompare(b.name) : a.namespace.localeCompare(b.namespace),
  );
}

/** The pods that exist and are not terminating, as `namespace/name`: a request to any other pod is reset. */
export function livePods(snapshot: ClusterSnapshot): Set<string> {
  return new Set(
    snapshot.pods
      .filter((p) => !p.metadata?.deletionTimestamp)
      .map((p) => `${p.metadata?.namespace ?? ""}/${p.metadata?.name ?? ""}`),
  );
}

function sortByName<T extends { metadata?: ObjectMetaLike }>(items: readonly T[]): T[] {
  const key = (x: T) => `${x.metadata?.namespace ?? ""}/${x.metadata?.name ?? ""}`;
  return [...items].sort((a, b) => key(a).localeCompare(key(b)));
}

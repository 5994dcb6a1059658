/**
 * Builders of the objects the simulator reads, shaped as the controller makes them and as Kubernetes'
 * own controllers make the pods (a ReplicaSet's: generated name, owner, `pod-template-hash`; a
 * StatefulSet's: `<set>-<ordinal>`, generated name `<set>-`, owner).
 */
import type { Track } from "../../src/api/types.js";
import {
  buildAppViews,
  type AppView,
  type ClusterSnapshot,
  type DestinationRuleLike,
  type PodLike,
  type ServiceLike,
  type VirtualServiceLike,
} from "./mesh-view.js";

const childLabels = (app: string, track?: Track) => ({
  "app.kubernetes.io/managed-by": "canaryapp",
  "canaryapp.io/app": app,
  ...(track ? { "canaryapp.io/track": track } : {}),
});

/** The pod-template-hash of each track's current ReplicaSet. */
export const TEMPLATE_HASH: Record<Track, string> = { primary: "5d8f7c9b4", secondary: "7b9c6d5f8" };

/** The route before ADR 0010: subsets of the app's host (a DestinationRule defines them). */
export function virtualService(app: string, namespace: string, weights: [number, number]): VirtualServiceLike {
  const host = `${app}.${namespace}.svc.cluster.local`;
  return {
    metadata: { name: app, namespace, labels: childLabels(app) },
    spec: {
      gateways: ["mesh"],
      http: [
        {
          name: "primary-secondary",
          route: [
            { destination: { host, subset: "primary" }, weight: weights[0] },
            { destination: { host, subset: "secondary" }, weight: weights[1] },
          ],
        },
      ],
    },
  };
}

/** The VirtualService as the controller makes it since ADR 0010: per-track Services as destinations. */
export function virtualServiceByHost(app: string, namespace: string, weights: [number, number]): VirtualServiceLike {
  const host = (track: Track) => `${app}-${track}.${namespace}.svc.cluster.local`;
  return {
    metadata: { name: app, namespace, labels: childLabels(app) },
    spec: {
      gateways: ["mesh"],
      http: [
        {
          name: "primary-secondary",
          route: [
            { destination: { host: host("primary") }, weight: weights[0] },
            { destination: { host: host("secondary") }, weight: weights[1] },
          ],
        },
      ],
    },
  };
}

/** The DestinationRule's subsets by the track label (for a StatefulSet: by `selectors`). */
export function destinationRule(
  app: string,
  namespace: string,
  selectors?: Record<Track, Record<string, string>>,
): DestinationRuleLike {
  const subset = (track: Track) => ({ name: track, labels: selectors?.[track] ?? { "canaryapp.io/track": track } });
  return {
    metadata: { name: app, namespace, labels: childLabels(app) },
    spec: { host: `${app}.${namespace}.svc.cluster.local`, subsets: [subset("primary"), subset("secondary")] },
  };
}

/** The app's Service `<app>`: selecting `track` only, or (before ADR 0010) both tracks. */
export function service(app: string, namespace: string, track?: Track): ServiceLike {
  return {
    metadata: { name: app, namespace, labels: childLabels(app) },
    spec: { selector: { "canaryapp.io/app": app, ...(track ? { "canaryapp.io/track": track } : {}) } },
  };
}

/** The Service of one track, `<app>-<track>`, selecting by the track label or by `selector`. */
export function trackService(
  app: string,
  namespace: string,
  track: Track,
  selector?: Record<string, string>,
): ServiceLike {
  return {
    metadata: { name: `${app}-${track}`, namespace, labels: childLabels(app, track) },
    spec: { selector: selector ?? { "canaryapp.io/app": app, "canaryapp.io/track": track } },
  };
}

/** The Services of a Deployment app since ADR 0010: `<app>` (the primary's pods), `<app>-primary`, `<app>-secondary`. */
export function services(app: string, namespace: string): ServiceLike[] {
  return [
    service(app, namespace, "primary"),
    trackService(app, namespace, "primary"),
    trackService(app, namespace, "secondary"),
  ];
}

const readiness = (ready: boolean) => ({ conditions: [{ type: "Ready", status: ready ? "True" : "False" }] });

/** A pod of the track's Deployment, as its ReplicaSet `<app>-<track>-<hash>` makes it. */
export function pod(app: string, namespace: string, track: Track, name: string, image: string, ready = true): PodLike {
  const replicaSet = `${app}-${track}-${TEMPLATE_HASH[track]}`;
  return {
    metadata: {
      name,
      generateName: `${replicaSet}-`,
      namespace,
      labels: { ...childLabels(app, track), app, version: track, "pod-template-hash": TEMPLATE_HASH[track] },
      ownerReferences: [{ apiVersion: "apps/v1", kind: "ReplicaSet", name: replicaSet, controller: true }],
    },
    spec: { containers: [{ name: "app", image }] },
    status: readiness(ready),
  };
}

/** A pod of the app's StatefulSet `<app>` at `ordinal`, running the template of `revision`. */
export function statefulSetPod(
  app: string,
  namespace: string,
  ordinal: number,
  revision: string,
  image: string,
  ready = true,
): PodLike {
  return {
    metadata: {
      name: `${app}-${ordinal}`,
      generateName: `${app}-`,
      namespace,
      labels: {
        ...childLabels(app),
        app,
        version: revision,
        "canaryapp.io/revision": revision,
        "controller-revision-hash": `${app}-${revision}`,
        "apps.kubernetes.io/pod-index": String(ordinal),
      },
      ownerReferences: [{ apiVersion: "apps/v1", kind: "StatefulSet", name: app, controller: true }],
    },
    spec: { containers: [{ name: "app", image }] },
    status: readiness(ready),
  };
}

/** Everything of a Deployment app as the controller makes it (ADR 0010), with the given pods. */
export function deploymentApp(
  app: string,
  namespace: string,
  weights: [number, number] | null,
  pods: PodLike[],
): ClusterSnapshot {
  return {
    virtualServices: weights === null ? [] : [virtualServiceByHost(app, namespace, weights)],
    services: services(app, namespace),
    destinationRules: [destinationRule(app, namespace)],
    pods,
  };
}

/**
 * The view of the Deployment app `web` in `shop`, with the given weights (null: no VirtualService) and
 * Ready pods per track.
 */
export function appView(
  weights: Record<Track, number> | null,
  primary: { name: string; image: string }[],
  secondary: { name: string; image: string }[],
): AppView {
  const pods = [
    ...primary.map((p) => pod("web", "shop", "primary", p.name, p.image)),
    ...secondary.map((p) => pod("web", "shop", "secondary", p.name, p.image)),
  ];
  const snapshot = deploymentApp("web", "shop", weights && [weights.primary, weights.secondary], pods);
  const [view] = buildAppViews(snapshot);
  if (!view) throw new Error("no view of web");
  return view;
}

/**
 * Builders of the objects the simulator reads, shaped as the controller makes them and as Kubernetes'
 * own controllers make the pods (a ReplicaSet's: generated name, owner, `pod-template-hash`; a
 * StatefulSet's: `<set>-<ordinal>`, generated name `<set>-`, owner).
 */
import type { Track } from "../../src/api/types.js";
import type { DestinationRuleLike, PodLike, ServiceLike } from "./cluster-model.js";
import type { ClusterSnapshot } from "./cluster-snapshot.js";
import type { GatewayLike, HTTPRouteLike, HTTPRouteRuleLike, ListenerLike } from "./gateway-api-objects.js";
import { buildAppViews, type AppView } from "./mesh-view.js";
import type { VirtualServiceLike } from "./virtual-service-routes.js";

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
    spec: {
      selector: { "canaryapp.io/app": app, ...(track ? { "canaryapp.io/track": track } : {}) },
      ports: [{ name: "http", port: 80 }],
    },
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
    spec: {
      selector: selector ?? { "canaryapp.io/app": app, "canaryapp.io/track": track },
      ports: [{ name: "http", port: 80 }],
    },
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

/**
 * The HTTPRoute of the controller's `gateway-api` router: the app's Service as the mesh parent (port 80),
 * each of `gateways` as a Gateway parent, `hostnames` only with a Gateway parent, and the weighted rule
 * after any `rules` given (as the API server returns it: `matches` defaulted to a PathPrefix `/`).
 */
export function httpRoute(
  app: string,
  namespace: string,
  weights: [number, number],
  opts: {
    gateways?: { namespace: string; name: string }[];
    hostnames?: string[];
    rules?: HTTPRouteRuleLike[];
    generation?: number;
    creationTimestamp?: string;
  } = {},
): HTTPRouteLike {
  const gateways = opts.gateways ?? [];
  return {
    metadata: {
      name: app,
      namespace,
      labels: childLabels(app),
      generation: opts.generation ?? 1,
      ...(opts.creationTimestamp !== undefined ? { creationTimestamp: opts.creationTimestamp } : {}),
    },
    spec: {
      parentRefs: [
        { group: "", kind: "Service", name: app, port: 80 },
        ...gateways.map((g) => ({ group: "gateway.networking.k8s.io", kind: "Gateway", ...g })),
      ],
      ...(gateways.length > 0 ? { hostnames: opts.hostnames ?? [`${app}.example.com`] } : {}),
      rules: [
        ...(opts.rules ?? []),
        {
          name: "primary-secondary",
          matches: [{ path: { type: "PathPrefix", value: "/" } }],
          backendRefs: [
            { group: "", kind: "Service", name: `${app}-primary`, port: 80, weight: weights[0] },
            { group: "", kind: "Service", name: `${app}-secondary`, port: 80, weight: weights[1] },
          ],
        },
      ],
    },
  };
}

/** A rule sending requests with header `name: value` (or matching the regex) to the app's secondary only. */
export function headerRule(app: string, name: string, value: string, regex = false): HTTPRouteRuleLike {
  return {
    name: "canary-by-header",
    matches: [
      {
        path: { type: "PathPrefix", value: "/" },
        headers: [{ type: regex ? "RegularExpression" : "Exact", name, value }],
      },
    ],
    backendRefs: [{ group: "", kind: "Service", name: `${app}-secondary`, port: 80, weight: 1 }],
  };
}

/** A Gateway of Istio's built-in class, with one HTTP listener on port 80 unless told. */
export function gateway(name: string, namespace: string, listeners?: ListenerLike[]): GatewayLike {
  return {
    metadata: { name, namespace },
    spec: {
      gatewayClassName: "istio",
      listeners: listeners ?? [
        { name: "http", port: 80, protocol: "HTTP", allowedRoutes: { namespaces: { from: "All" } } },
      ],
    },
  };
}

/** A Deployment app (ADR 0010's Services) routed by an HTTPRoute instead of a VirtualService. */
export function gatewayApiApp(
  app: string,
  namespace: string,
  weights: [number, number],
  pods: PodLike[],
  opts: Parameters<typeof httpRoute>[3] = {},
): ClusterSnapshot {
  return {
    virtualServices: [],
    services: services(app, namespace),
    httpRoutes: [httpRoute(app, namespace, weights, opts)],
    pods,
  };
}

/** Builders of the objects the simulator reads, shaped as the controller makes them. */
import type { Track } from "../../src/api/types.js";
import type { DeploymentLike, PodLike, ServiceLike, VirtualServiceLike } from "./mesh-view.js";
import type { AppView, PodView } from "./mesh-view.js";

const childLabels = (app: string, track?: Track) => ({
  "app.kubernetes.io/managed-by": "canaryapp",
  "canaryapp.io/app": app,
  ...(track ? { "canaryapp.io/track": track } : {}),
});

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

/** The app's Service `<app>`: selecting `track` only, or (before ADR 0010) both tracks. */
export function service(app: string, namespace: string, track?: Track): ServiceLike {
  return {
    metadata: { name: app, namespace, labels: childLabels(app) },
    spec: { selector: { "canaryapp.io/app": app, ...(track ? { "canaryapp.io/track": track } : {}) } },
  };
}

export function pod(app: string, namespace: string, track: Track, name: string, image: string, ready = true): PodLike {
  return {
    metadata: { name, namespace, labels: { ...childLabels(app, track), app, version: track } },
    spec: { containers: [{ name: "app", image }] },
    status: { conditions: [{ type: "Ready", status: ready ? "True" : "False" }] },
  };
}

export function deployment(app: string, namespace: string, track: Track): DeploymentLike {
  return {
    metadata: { name: `${app}-${track}`, namespace, labels: childLabels(app, track) },
    spec: { selector: { matchLabels: { "canaryapp.io/app": app, "canaryapp.io/track": track } } },
  };
}

/** An app view with the given weights and Ready pods per track. */
export function appView(
  weights: Record<Track, number> | null,
  primary: Omit<PodView, "track">[],
  secondary: Omit<PodView, "track">[],
): AppView {
  return {
    namespace: "shop",
    name: "web",
    weights,
    tracks: {
      primary: { workload: "web-primary", readyPods: primary.map((p) => ({ ...p, track: "primary" })) },
      secondary: { workload: "web-secondary", readyPods: secondary.map((p) => ({ ...p, track: "secondary" })) },
    },
    servicePods: primary.map((p) => ({ ...p, track: "primary" })),
  };
}

import type { ResolvedSpec } from "../api/defaults.js";
import type { CanaryApp, Track } from "../api/types.js";
import { LABELS } from "../api/types.js";
import type { ChildMeta } from "./meta.js";
import { appRef, childLabels, childMeta, deploymentName } from "./meta.js";

/** The name of the app's container in both Deployments; the observer reads the image from it. */
export const APP_CONTAINER = "app";

export interface DeploymentObject {
  apiVersion: "apps/v1";
  kind: "Deployment";
  metadata: ChildMeta;
  spec: {
    replicas: number;
    selector: { matchLabels: Record<string, string> };
    progressDeadlineSeconds: number;
    strategy: { type: "RollingUpdate"; rollingUpdate: { maxUnavailable: number | string; maxSurge: number | string } };
    template: {
      metadata: { labels: Record<string, string>; annotations?: Record<string, string> };
      spec: Record<string, unknown> & { containers: Record<string, unknown>[] };
    };
  };
}

/**
 * The primary or secondary Deployment. Pods carry Istio's `app` and `version` labels (telemetry and
 * DestinationRule subsets read them) besides the controller's own; user labels never override ours.
 */
export function buildDeployment(
  app: CanaryApp,
  spec: ResolvedSpec,
  track: Track,
  want: { image: string; replicas: number },
): DeploymentObject {
  const { name } = appRef(app);
  const pod = spec.pod;
  const selector = { [LABELS.app]: name, [LABELS.track]: track };
  const container: Record<string, unknown> = {
    name: APP_CONTAINER,
    image: want.image,
    ports: [{ name: "http", containerPort: spec.imageListenPort, protocol: "TCP" }],
    ...(pod.command ? { command: pod.command } : {}),
    ...(pod.args ? { args: pod.args } : {}),
    ...(pod.env ? { env: pod.env } : {}),
    ...(pod.resources ? { resources: pod.resources } : {}),
    ...(pod.readinessProbe ? { readinessProbe: pod.readinessProbe } : {}),
    ...(pod.livenessProbe ? { livenessProbe: pod.livenessProbe } : {}),
  };
  return {
    apiVersion: "apps/v1",
    kind: "Deployment",
    metadata: childMeta(app, deploymentName(name, track), track),
    spec: {
      replicas: want.replicas,
      selector: { matchLabels: selector },
      progressDeadlineSeconds: spec.analysis.progressDeadlineSeconds,
      // Never below the wanted capacity while the primary takes a promoted image.
      strategy: { type: "RollingUpdate", rollingUpdate: { maxUnavailable: 0, maxSurge: "25%" } },
      template: {
        metadata: {
          labels: { ...pod.labels, app: name, version: track, ...childLabels(name, track) },
          ...(pod.annotations ? { annotations: pod.annotations } : {}),
        },
        spec: {
          ...(pod.serviceAccountName ? { serviceAccountName: pod.serviceAccountName } : {}),
          ...(pod.imagePullSecrets ? { imagePullSecrets: pod.imagePullSecrets } : {}),
          containers: [container],
        },
      },
    },
  };
}

import { AppsV1Api, type KubeConfig, type V1Deployment } from "@kubernetes/client-node";
import { MERGE_PATCH } from "../../test/support/kube.js";
import type { NamespaceView } from "./watch.js";

/** The objects the benchmark reads where a rollout stands: a NamespaceView, or plain data in tests. */
export type ObjectView = Pick<NamespaceView, "get" | "list">;

/** The work every controller is given: the same apps, steps and check. */
export interface Work {
  /** How many apps (1 replica each). */
  apps: number;
  /** The analysis interval asked for (a controller may have a floor: Flagger's is 10 s). */
  intervalSeconds: number;
  stepWeight: number;
  maxWeight: number;
}

/** What a peer runs against. */
export interface PeerContext {
  /** Admin credentials, for the benchmark's own reads and writes. */
  admin: KubeConfig;
  adminKubeconfig: string;
  /** The kubeconfig the controller is given: the counting proxy's. */
  controllerKubeconfig: string;
  namespace: string;
  prometheusUrl: string;
  work: Work;
  /** Where a controller's log goes. */
  logDir: string;
}

/** A controller process started by the benchmark. */
export interface RunningController {
  pid: number;
  stop(): Promise<void>;
}

/** The controllers compared, in the order the table shows them (the first is the one the ratios divide by). */
export const PEER_NAMES = ["canaryapp", "flagger", "argo-rollouts"] as const;
export type PeerName = (typeof PEER_NAMES)[number];

/**
 * One controller under comparison: how to start it, how to give it an app, and how to read from the
 * cluster's objects where a rollout stands. The view follows the collections `paths` name.
 */
export interface Peer {
  readonly name: PeerName;
  /** How the figures name it (`Flagger 1.44.0`). */
  readonly label: string;
  /** The interval the controller really uses for `work`. */
  effectiveIntervalSeconds(work: Work): number;
  paths(namespace: string): string[];
  /** The objects one app is made of, at `image` (what `--dry-run` prints). */
  manifests(ctx: Pick<PeerContext, "namespace" | "prometheusUrl" | "work">, app: string, image: string): object[];
  /** Anything the cluster needs once before the controller starts (CRDs). */
  prepare(ctx: PeerContext): Promise<void>;
  start(ctx: PeerContext): Promise<RunningController>;
  create(ctx: PeerContext, app: string, image: string): Promise<void>;
  changeImage(ctx: PeerContext, app: string, image: string): Promise<void>;
  /** The app rests on `image`: all traffic on the primary, which runs it, no test under way. */
  atRest(view: ObjectView, namespace: string, app: string, image: string): boolean;
  /**
   * All traffic is on `image`: the route sends everything to the primary, which runs it — the rollout is over
   * for every user, though the controller may still be removing what the test left (`atRest` then says done).
   */
  allTrafficOn(view: ObjectView, namespace: string, app: string, image: string): boolean;
  /** A Deployment of `image` other than the primary is asked for at least one replica. */
  scaledUp(view: ObjectView, namespace: string, app: string, image: string): boolean;
  /** The route gives the new version some weight. */
  weighted(view: ObjectView, namespace: string, app: string): boolean;
  /** Where the controller records its checks: what they measured for `apps`, read once their rollouts ended. */
  checks?(ctx: PeerContext, apps: readonly string[]): Promise<string>;
}

/** The image of the first container of a Deployment, and its asked-for replicas. */
export function deploymentOf(seen: { spec?: Record<string, unknown> } | undefined): {
  image: string | undefined;
  replicas: number;
} {
  const spec = seen?.spec as
    { replicas?: number; template?: { spec?: { containers?: { image?: string }[] } } } | undefined;
  return { image: spec?.template?.spec?.containers?.[0]?.image, replicas: spec?.replicas ?? 1 };
}

/** The weight of each destination host (or subset) of the first HTTP route of a VirtualService. */
export function routeWeights(seen: { spec?: Record<string, unknown> } | undefined): Map<string, number> {
  const http = (
    seen?.spec as
      { http?: { route?: { destination?: { host?: string; subset?: string }; weight?: number }[] }[] } | undefined
  )?.http;
  const weights = new Map<string, number>();
  for (const d of http?.[0]?.route ?? []) {
    weights.set(
      d.destination?.subset ?? d.destination?.host ?? "",
      d.weight ?? (http?.[0]?.route?.length === 1 ? 100 : 0),
    );
  }
  return weights;
}

export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** The app's Deployment as the peers that start from one (Flagger, Argo Rollouts) are given it: 1 replica of `image`. */
export function appDeployment(namespace: string, app: string, image: string): V1Deployment {
  return {
    apiVersion: "apps/v1",
    kind: "Deployment",
    metadata: { name: app, namespace, labels: { app } },
    spec: {
      replicas: 1,
      selector: { matchLabels: { app } },
      template: {
        metadata: { labels: { app } },
        spec: { containers: [{ name: "app", image, ports: [{ name: "http", containerPort: 8080 }] }] },
      },
    },
  };
}

/** A new version for those peers: the Deployment's pod template gets `image` (their controllers follow it). */
export async function changeDeploymentImage(ctx: PeerContext, app: string, image: string): Promise<void> {
  const containers = appDeployment(ctx.namespace, app, image).spec?.template.spec?.containers;
  await ctx.admin
    .makeApiClient(AppsV1Api)
    .patchNamespacedDeployment(
      { namespace: ctx.namespace, name: app, body: { spec: { template: { spec: { containers } } } } },
      MERGE_PATCH,
    );
}

import { STATUS_CODES } from "node:http";
import {
  HttpMethod,
  RequestContext,
  type CoreV1Event,
  type KubeConfig,
  type V1Deployment,
} from "@kubernetes/client-node";
import { GROUP, PLURAL, VERSION, type CanaryApp } from "../../src/api/types.js";
import { StreamWatch } from "../../src/kube/watch.js";
import { ISTIO_NETWORKING, destinationTrack } from "../../src/router/istio.js";
import { fetch } from "undici";

/** The kinds the chaos checker follows. */
export type Kind = "CanaryApp" | "Deployment" | "VirtualService" | "Event";

/** A CanaryApp as the checker needs it. */
export interface AppPoint {
  name: string;
  specImage: string;
  primaryImage: string | undefined;
  phase: string | undefined;
  stage: string | undefined;
  /** The image under test, while a test runs. */
  canaryImage: string | undefined;
  failedImages: { image: string; failedAt: string; reason: string }[];
}

export interface DeploymentPoint {
  name: string;
  image: string | undefined;
  /** The status is of the current template and at least one pod of it is available. */
  ready: boolean;
  /** The pod template, as JSON (the checker compares it with the template of the last ready status). */
  template?: string;
  /** The status, of whichever generation, counts at least one available and updated pod. */
  available?: boolean;
}

export interface RoutePoint {
  name: string;
  /** Per HTTP route of the VirtualService, its destinations' [track, weight] (by host or by subset). */
  routes: [string, number][][];
}

export interface EventPoint {
  name: string;
  app: string;
  reason: string;
  message: string;
  count: number;
}

/** One change of the world, as a watch delivered it; `rv` is the etcd revision (one order for every kind). */
export type Change =
  | { rv: number; at: number; kind: "CanaryApp"; type: ChangeType; object: AppPoint }
  | { rv: number; at: number; kind: "Deployment"; type: ChangeType; object: DeploymentPoint }
  | { rv: number; at: number; kind: "VirtualService"; type: ChangeType; object: RoutePoint }
  | { rv: number; at: number; kind: "Event"; type: ChangeType; object: EventPoint };

export type ChangeType = "ADDED" | "MODIFIED" | "DELETED";

interface Raw {
  metadata?: { name?: string; resourceVersion?: string; generation?: number };
  [key: string]: unknown;
}

/** A CanaryApp as the checker needs it. */
export function appPoint(raw: unknown): AppPoint {
  const o = raw as CanaryApp;
  return {
    name: o.metadata?.name ?? "",
    specImage: o.spec?.image ?? "",
    primaryImage: o.status?.primaryImage,
    phase: o.status?.phase,
    stage: o.status?.canary?.stage,
    canaryImage: o.status?.canary?.image,
    failedImages: (o.status?.failedImages ?? []).map((f) => ({
      image: f.image,
      failedAt: f.failedAt,
      reason: f.reason,
    })),
  };
}

/** A Deployment as the checker needs it. */
export function deploymentPoint(raw: unknown): DeploymentPoint {
  const o = raw as V1Deployment;
  const replicas = o.spec?.replicas ?? 1;
  const status = o.status ?? {};
  const current = (status.observedGeneration ?? 0) >= (o.metadata?.generation ?? 1);
  const available = replicas > 0 && (status.availableReplicas ?? 0) >= 1 && (status.updatedReplicas ?? 0) >= 1;
  return {
    name: o.metadata?.name ?? "",
    image: o.spec?.template.spec?.containers[0]?.image,
    ready: current && available,
    template: JSON.stringify(o.spec?.template ?? null),
    available,
  };
}

interface VirtualServiceRaw {
  metadata?: { name?: string };
  spec?: { http?: { route?: { destination?: { host?: string; subset?: string }; weight?: number }[] }[] };
}

/** A VirtualService's routes as the checker needs them. */
export function routePoint(raw: unknown): RoutePoint {
  const o = raw as VirtualServiceRaw;
  return {
    name: o.metadata?.name ?? "",
    routes: (o.spec?.http ?? []).map((h) =>
      (h.route ?? []).map((r): [string, number] => [destinationTrack(r.destination) ?? "", r.weight ?? 0]),
    ),
  };
}

function eventPoint(raw: unknown): EventPoint {
  const o = raw as CoreV1Event;
  return {
    name: o.metadata.name ?? "",
    app: o.involvedObject.kind === "CanaryApp" ? (o.involvedObject.name ?? "") : "",
    reason: o.reason ?? "",
    message: o.message ?? "",
    count: o.count ?? 1,
  };
}

interface Source {
  kind: Kind;
  path: string;
  point: (o: unknown) => AppPoint | DeploymentPoint | RoutePoint | EventPoint;
}

function sources(namespace: string): Source[] {
  return [
    {
      kind: "CanaryApp",
      path: `/apis/${GROUP}/${VERSION}/namespaces/${namespace}/${PLURAL}`,
      point: appPoint,
    },
    { kind: "Deployment", path: `/apis/apps/v1/namespaces/${namespace}/deployments`, point: deploymentPoint },
    {
      kind: "VirtualService",
      path: `/apis/${ISTIO_NETWORKING.group}/${ISTIO_NETWORKING.version}/namespaces/${namespace}/virtualservices`,
      point: routePoint,
    },
    { kind: "Event", path: `/api/v1/namespaces/${namespace}/events`, point: eventPoint },
  ];
}

const REWATCH_DELAY_MS = 200;

/**
 * Records every change of a namespace's CanaryApps, Deployments, VirtualServices and Events: one consistent
 * list of all four kinds at a single resourceVersion, then a watch of each from it (again from the last
 * resourceVersion seen after any disconnect). Sorted by resourceVersion, the changes replay the world in
 * etcd's order. A watch the server can no longer resume (410 Gone) is counted as a gap: the replay would miss
 * changes, so a run with gaps proves nothing.
 */
export class WorldRecorder {
  readonly changes: Change[] = [];
  /** The state every kind was listed at, in etcd order (the replay starts from it). */
  readonly initial: Change[] = [];
  gaps = 0;
  rewatches = 0;
  private readonly aborts = new Map<Kind, { abort(): void }>();
  private stopped = false;

  private constructor(
    private readonly kc: KubeConfig,
    readonly namespace: string,
  ) {}

  static async start(kc: KubeConfig, namespace: string): Promise<WorldRecorder> {
    const recorder = new WorldRecorder(kc, namespace);
    await recorder.begin();
    return recorder;
  }

  private async get(
    path: string,
    query: Record<string, string>,
  ): Promise<{ metadata?: Raw["metadata"]; items: Raw[] }> {
    const cluster = this.kc.getCurrentCluster();
    if (cluster === null) throw new Error("world recorder: the kubeconfig has no current cluster");
    const url = new URL(cluster.server + path);
    for (const [k, v] of Object.entries(query)) url.searchParams.set(k, v);
    const context = new RequestContext(url.toString(), HttpMethod.GET);
    await this.kc.applySecurityAuthentication(context);
    const send = () => fetch(url, { headers: context.getHeaders(), dispatcher: context.getDispatcher() });
    let response = await send();
    // A server whose storage is still (re)initializing asks to be asked again.
    for (let tries = 0; response.status === 429 && tries < 30; tries++) {
      await response.body?.cancel();
      await new Promise((resolve) => setTimeout(resolve, 1_000));
      response = await send();
    }
    if (response.status !== 200) {
      throw new Error(`GET ${path}: ${response.status} ${STATUS_CODES[response.status]}: ${await response.text()}`);
    }
    return (await response.json()) as { metadata?: Raw["metadata"]; items: Raw[] };
  }

  private async begin(): Promise<void> {
    const all = sources(this.namespace);
    const [first, ...rest] = all;
    if (first === undefined) return;
    // A quorum read fixes the revision; every other kind is listed at exactly that revision.
    const firstList = await this.get(first.path, {});
    const rv = firstList.metadata?.resourceVersion ?? "0";
    const lists = [
      { source: first, list: firstList },
      ...(await Promise.all(
        rest.map(async (source) => ({
          source,
          list: await this.get(source.path, { resourceVersion: rv, resourceVersionMatch: "Exact" }),
        })),
      )),
    ];
    for (const { source, list } of lists) {
      for (const item of list.items) {
        this.initial.push({
          rv: Number(item.metadata?.resourceVersion ?? 0),
          at: Date.now(),
          kind: source.kind,
          type: "ADDED",
          object: source.point(item),
        } as Change);
      }
      this.watch(source, rv);
    }
  }

  private watch(source: Source, from: string): void {
    if (this.stopped) return;
    let last = from;
    const again = (resume: boolean) => {
      if (this.stopped) return;
      this.rewatches++;
      if (!resume) {
        this.gaps++;
        // Gone: start over from a fresh list; the changes in between are lost to the replay (a gap).
        void this.get(source.path, {}).then(
          (list) => {
            last = list.metadata?.resourceVersion ?? last;
            setTimeout(() => this.watch(source, last), REWATCH_DELAY_MS);
          },
          () => setTimeout(() => again(false), REWATCH_DELAY_MS * 5),
        );
        return;
      }
      setTimeout(() => this.watch(source, last), REWATCH_DELAY_MS);
    };
    let gone = false;
    new StreamWatch(this.kc)
      .watch(
        source.path,
        { resourceVersion: last, allowWatchBookmarks: true, timeoutSeconds: 300 },
        (type, object) => {
          const raw = object as Raw & { code?: number };
          if (type === "ERROR") {
            if (raw.code === 410) gone = true;
            return;
          }
          const rv = raw.metadata?.resourceVersion;
          if (rv !== undefined) last = rv;
          if (type === "BOOKMARK") return;
          if (type !== "ADDED" && type !== "MODIFIED" && type !== "DELETED") return;
          this.changes.push({
            rv: Number(rv ?? 0),
            at: Date.now(),
            kind: source.kind,
            type,
            object: source.point(raw),
          } as Change);
        },
        (err) => {
          const status = (err as { statusCode?: number } | null)?.statusCode;
          again(!gone && status !== 410);
        },
      )
      .then(
        (handle) => {
          this.aborts.set(source.kind, handle);
          if (this.stopped) handle.abort();
        },
        () => again(true),
      );
  }

  /** Every change, initial state first, in etcd order. */
  history(): Change[] {
    return [...this.initial, ...this.changes].sort((a, b) => a.rv - b.rv);
  }

  stop(): void {
    this.stopped = true;
    for (const handle of this.aborts.values()) handle.abort();
  }
}

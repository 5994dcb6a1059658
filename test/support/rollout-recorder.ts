import { AppsV1Api, CustomObjectsApi, type KubeConfig } from "@kubernetes/client-node";
import { StreamWatch } from "../../src/kube/watch.js";
import { GROUP, LABELS, PLURAL, VERSION } from "../../src/api/types.js";
import type { CanaryApp, CanaryStage, Phase } from "../../src/api/types.js";
import { childNames } from "../../src/api/meta.js";
import { readIstioWeights } from "../../src/router/istio.js";
import { ISTIO_NETWORKING } from "../../src/router/istio.js";

/** One value a rollout went through, with the time (Date.now()) the recorder saw it. */
export interface Timed<T> {
  at: number;
  value: T;
}

export interface RoutedWeights {
  primary: number;
  secondary: number;
}

/** The parts of the CanaryApp's status a rollout is followed by. */
export interface StatusPoint {
  phase: Phase | undefined;
  stage: CanaryStage | undefined;
  step: number | undefined;
  canaryImage: string | undefined;
}

interface DeploymentLike {
  metadata?: { name?: string; deletionTimestamp?: unknown };
  spec?: { replicas?: number; template?: { spec?: { containers?: { image?: string }[] } } };
}

interface ListLike {
  metadata?: { resourceVersion?: string };
  items: unknown[];
}

interface Source {
  path: string;
  query: Record<string, string>;
  list: () => Promise<ListLike>;
  apply: (type: "ADDED" | "MODIFIED" | "DELETED" | "RESET", object: unknown) => void;
}

const RESTART_DELAY_MS = 200;
const FIRST_LIST_TIMEOUT_MS = 30_000;

/**
 * Follows one CanaryApp's rollout through watches (list, then watch from the list's resourceVersion, again
 * after every disconnect): each distinct VirtualService weight split, primary and secondary Deployment
 * image, and status point, in order, with the time it arrived. Reused by the benchmarks, which read the same
 * logs through `rolloutTimings`.
 */
/** A Deployment's image and spec.replicas. */
export interface ImageReplicas {
  image: string;
  replicas: number;
}

/**
 * The pods asked for of an old and a new image over both Deployments, as [old, new] pairs, one per change
 * from the one in force at `since` on (a batch release's replica sequence).
 */
export function podSequence(
  recorder: RolloutRecorder,
  oldImage: string,
  newImage: string,
  since = 0,
): [number, number][] {
  const out: [number, number][] = [];
  // The state in force at `since`, then each later one.
  const inForce = recorder.workloads.filter((w) => w.at <= since).at(-1);
  const later = recorder.workloads.filter((w) => w.at > since);
  for (const { value } of [...(inForce !== undefined ? [inForce] : []), ...later]) {
    const count = (image: string) =>
      [value.primary, value.secondary].reduce((n, w) => n + (w?.image === image ? w.replicas : 0), 0);
    const pair: [number, number] = [count(oldImage), count(newImage)];
    const last = out.at(-1);
    if (last?.[0] !== pair[0] || last[1] !== pair[1]) out.push(pair);
  }
  return out;
}

export class RolloutRecorder {
  /** Distinct consecutive [primary, secondary] splits of the canary route; null when it is missing. */
  readonly weights: Timed<RoutedWeights | null>[] = [];
  /** The secondary Deployment's image, null while it does not exist. */
  readonly secondary: Timed<string | null>[] = [];
  /** The primary Deployment's image, null while it does not exist. */
  readonly primary: Timed<string | null>[] = [];
  readonly statuses: Timed<StatusPoint>[] = [];
  /** Each Deployment's image and replicas (spec), null while it does not exist. */
  readonly workloads: Timed<{ primary: ImageReplicas | null; secondary: ImageReplicas | null }>[] = [];
  /** The CanaryApp as last seen. */
  app: CanaryApp | undefined;

  private readonly deployments = new Map<string, DeploymentLike>();
  private readonly aborts = new Set<{ abort(): void }>();
  private readonly listeners = new Set<() => void>();
  private stopped = false;

  private constructor(
    private readonly kc: KubeConfig,
    readonly namespace: string,
    readonly name: string,
  ) {}

  /** Starts following `name` in `namespace`; resolves once each watch has listed its current state. */
  static async start(kc: KubeConfig, namespace: string, name: string): Promise<RolloutRecorder> {
    const recorder = new RolloutRecorder(kc, namespace, name);
    try {
      await recorder.begin();
    } catch (error) {
      recorder.stop();
      throw error;
    }
    return recorder;
  }

  /** The weights as last seen. */
  currentWeights(): RoutedWeights | null {
    return this.weights.at(-1)?.value ?? null;
  }

  currentSecondary(): string | null {
    return this.secondary.at(-1)?.value ?? null;
  }

  currentPrimary(): string | null {
    return this.primary.at(-1)?.value ?? null;
  }

  /**
   * The weight splits in force from `since` (ms) on, as [primary, secondary] pairs: the one in force at
   * `since`, then each later one. A missing route is left out.
   */
  weightPairs(since = 0): [number, number][] {
    const inForce = this.weights.filter((w) => w.at <= since).at(-1);
    const later = this.weights.filter((w) => w.at > since);
    return [...(inForce !== undefined ? [inForce] : []), ...later].flatMap((w) =>
      w.value === null ? [] : [[w.value.primary, w.value.secondary] as [number, number]],
    );
  }

  /**
   * Resolves with the first non-undefined value of `check`, evaluated now and on every change the watches
   * bring; rejects after `timeoutMs` naming `what` and the last weights, images and status point seen.
   */
  until<T>(what: string, check: (recorder: this) => T | undefined, timeoutMs = 30_000): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      const evaluate = () => {
        const value = check(this);
        if (value === undefined) return;
        clearTimeout(timer);
        this.listeners.delete(evaluate);
        resolve(value);
      };
      const timer = setTimeout(() => {
        this.listeners.delete(evaluate);
        reject(new Error(`timed out after ${timeoutMs} ms waiting for ${what}; ${this.describe()}`));
      }, timeoutMs);
      this.listeners.add(evaluate);
      evaluate();
    });
  }

  /** A one-line account of what was seen, for failure messages. */
  describe(): string {
    const weights = this.weightPairs()
      .map(([p, s]) => `${p}/${s}`)
      .join(" → ");
    const status = this.statuses.at(-1)?.value;
    return `weights ${weights}; primary ${this.currentPrimary()}; secondary ${this.currentSecondary()}; status ${JSON.stringify(status)}; message ${JSON.stringify(this.app?.status?.message)}`;
  }

  stop(): void {
    this.stopped = true;
    for (const abort of this.aborts) abort.abort();
    this.aborts.clear();
  }

  private async begin(): Promise<void> {
    const custom = this.kc.makeApiClient(CustomObjectsApi);
    const apps = this.kc.makeApiClient(AppsV1Api);
    const { namespace, name } = this;
    const names = childNames(name);
    const byName = { fieldSelector: `metadata.name=${name}` };
    const istio = { ...ISTIO_NETWORKING, plural: "virtualservices", namespace };
    const sources: Source[] = [
      {
        path: `/apis/${GROUP}/${VERSION}/namespaces/${namespace}/${PLURAL}`,
        query: byName,
        list: async () =>
          (await custom.listNamespacedCustomObject({
            group: GROUP,
            version: VERSION,
            plural: PLURAL,
            namespace,
            ...byName,
          })) as ListLike,
        apply: (type, object) => {
          this.app = type === "DELETED" || object === undefined ? undefined : (object as CanaryApp);
          const status = this.app?.status;
          this.push(this.statuses, {
            phase: status?.phase,
            stage: status?.canary?.stage,
            step: status?.canary?.step,
            canaryImage: status?.canary?.image,
          });
        },
      },
      {
        path: `/apis/${ISTIO_NETWORKING.group}/${ISTIO_NETWORKING.version}/namespaces/${namespace}/virtualservices`,
        query: { fieldSelector: `metadata.name=${names.virtualService}` },
        list: async () =>
          (await custom.listNamespacedCustomObject({
            ...istio,
            fieldSelector: `metadata.name=${names.virtualService}`,
          })) as ListLike,
        apply: (type, object) => {
          const weights = type === "DELETED" || object === undefined ? null : readIstioWeights(object);
          this.push(this.weights, weights);
        },
      },
      {
        path: `/apis/apps/v1/namespaces/${namespace}/deployments`,
        query: { labelSelector: `${LABELS.app}=${name}` },
        list: () =>
          apps.listNamespacedDeployment({
            namespace,
            labelSelector: `${LABELS.app}=${name}`,
          }),
        apply: (type, object) => {
          const deployment = object as DeploymentLike | undefined;
          const key = deployment?.metadata?.name;
          if (type === "RESET") this.deployments.clear();
          if (deployment !== undefined && key !== undefined) {
            if (type === "DELETED") this.deployments.delete(key);
            else this.deployments.set(key, deployment);
          }
          const image = (d: DeploymentLike | undefined) =>
            d === undefined ? null : (d.spec?.template?.spec?.containers?.[0]?.image ?? null);
          this.push(this.primary, image(this.deployments.get(names.primary)));
          this.push(this.secondary, image(this.deployments.get(names.secondary)));
          const sized = (d: DeploymentLike | undefined): ImageReplicas | null =>
            d === undefined ? null : { image: image(d) ?? "", replicas: d.spec?.replicas ?? 1 };
          this.push(this.workloads, {
            primary: sized(this.deployments.get(names.primary)),
            secondary: sized(this.deployments.get(names.secondary)),
          });
        },
      },
    ];
    await Promise.all(sources.map((source) => this.firstFollow(source)));
  }

  /**
   * The first list and watch, retried for a while: a freshly established CRD answers 429 ("storage is
   * (re)initializing") until the API server's watch cache for it is ready.
   */
  private async firstFollow(source: Source): Promise<void> {
    const deadline = Date.now() + FIRST_LIST_TIMEOUT_MS;
    for (;;) {
      try {
        await this.follow(source);
        return;
      } catch (error) {
        if (this.stopped || Date.now() > deadline) throw error;
        await new Promise((resolve) => setTimeout(resolve, RESTART_DELAY_MS));
      }
    }
  }

  /**
   * Watches from `from`, or lists and watches from the list's resourceVersion. After a disconnect (the
   * client gives up on a watch quiet for 30 s) it watches on from the last resourceVersion seen, so no
   * change is missed; only when that is too old (410 Gone) or the watch cannot be opened does it list again.
   */
  private async follow(source: Source, from?: string): Promise<void> {
    let resourceVersion = from;
    if (resourceVersion === undefined) {
      const list = await source.list();
      // RESET replaces what was known before this list (objects deleted while disconnected go).
      if (list.items.length === 0) source.apply("RESET", undefined);
      else for (const [i, item] of list.items.entries()) source.apply(i === 0 ? "RESET" : "ADDED", item);
      resourceVersion = list.metadata?.resourceVersion;
    }
    let expired = false;
    const abort = await new StreamWatch(this.kc).watch(
      source.path,
      { ...source.query, resourceVersion, allowWatchBookmarks: true },
      (type: string, object: unknown) => {
        if (type === "ERROR") {
          expired = true;
          return;
        }
        const version = (object as { metadata?: { resourceVersion?: string } } | undefined)?.metadata?.resourceVersion;
        if (version !== undefined) resourceVersion = version;
        if (type === "ADDED" || type === "MODIFIED" || type === "DELETED") source.apply(type, object);
      },
      () => {
        this.aborts.delete(abort);
        this.retry(source, expired ? undefined : resourceVersion);
      },
    );
    this.aborts.add(abort);
    if (this.stopped) abort.abort();
  }

  private retry(source: Source, from?: string): void {
    if (this.stopped) return;
    setTimeout(() => {
      if (!this.stopped) this.follow(source, from).catch(() => this.retry(source));
    }, RESTART_DELAY_MS);
  }

  /** Appends `value` when it differs from the last one; every watched change is shown to `until`'s checks. */
  private push<T>(log: Timed<T>[], value: T): void {
    const last = log.at(-1);
    if (last === undefined || JSON.stringify(last.value) !== JSON.stringify(value)) log.push({ at: Date.now(), value });
    for (const listener of [...this.listeners]) listener();
  }
}

/** The values a recorder log went through from `since` (ms) on, in order. */
export function seen<T>(log: readonly Timed<T>[], since = 0): T[] {
  return log.filter((entry) => entry.at >= since).map((entry) => entry.value);
}

/** Median and maximum of some figures (NaN when there are none). */
export interface Summary {
  n: number;
  median: number;
  max: number;
}

export function summarize(values: readonly number[]): Summary {
  const sorted = [...values].sort((a, b) => a - b);
  const n = sorted.length;
  if (n === 0) return { n, median: Number.NaN, max: Number.NaN };
  const mid = Math.floor(n / 2);
  const median = n % 2 === 1 ? (sorted[mid] ?? 0) : ((sorted[mid - 1] ?? 0) + (sorted[mid] ?? 0)) / 2;
  return { n, median, max: sorted[n - 1] ?? 0 };
}

/** What a recorded rollout says about the controller's speed. */
export interface RolloutTimings {
  /** From the spec.image change to the secondary Deployment's appearance; undefined if it never appeared. */
  secondaryCreatedMs: number | undefined;
  /**
   * For each step after the first: the gap between two successive weight increases of the secondary,
   * minus the configured interval (what a step costs beyond its wait). A gap with a pause in it is left out.
   */
  stepExtraMs: number[];
}

/**
 * Reads the timings of one test out of a recorder: the test began with the spec.image patch at
 * `patchedAt` (ms) and steps every `intervalMs`. Only increases between two weights above 0 count as
 * steps: the first step waits on the secondary's readiness, the last change on the primary's rollout.
 */
export function rolloutTimings(recorder: RolloutRecorder, patchedAt: number, intervalMs: number): RolloutTimings {
  const created = recorder.secondary.find((s) => s.at >= patchedAt && s.value !== null);
  const weights = recorder.weights.filter((w) => w.at >= patchedAt && w.value !== null);
  const stepExtraMs: number[] = [];
  for (let i = 1; i < weights.length; i++) {
    const before = weights[i - 1];
    const after = weights[i];
    if (before?.value == null || after?.value == null) continue;
    if (before.value.secondary === 0 || after.value.secondary <= before.value.secondary) continue;
    const paused = recorder.statuses.some((s) => s.value.phase === "Paused" && s.at >= before.at && s.at <= after.at);
    if (!paused) stepExtraMs.push(after.at - before.at - intervalMs);
  }
  return { secondaryCreatedMs: created === undefined ? undefined : created.at - patchedAt, stepExtraMs };
}

/** Collects timings over several tests and prints them as `# ...` lines. */
export class TimingLog {
  readonly secondaryCreatedMs: number[] = [];
  readonly stepExtraMs: number[] = [];

  add(timings: RolloutTimings): RolloutTimings {
    if (timings.secondaryCreatedMs !== undefined) this.secondaryCreatedMs.push(timings.secondaryCreatedMs);
    this.stepExtraMs.push(...timings.stepExtraMs);
    return timings;
  }

  print(label: string): void {
    const created = summarize(this.secondaryCreatedMs);
    const extra = summarize(this.stepExtraMs);
    console.log(
      `# ${label}: spec.image patch → secondary Deployment created: median ${created.median} ms over ${created.n} tests (${this.secondaryCreatedMs.join(", ")})`,
    );
    console.log(
      `# ${label}: time a step takes beyond its interval: median ${extra.median} ms, max ${extra.max} ms over ${extra.n} steps (${this.stepExtraMs.join(", ")})`,
    );
  }
}

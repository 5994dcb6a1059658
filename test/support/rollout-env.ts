import { AppsV1Api, CoreV1Api, type KubeConfig } from "@kubernetes/client-node";
import { startPrometheus, type RunningPrometheus } from "../../e2e/prometheus.js";
import type { AnalysisSpec, CanaryApp, CanaryAppSpec, CanaryAppStatus } from "../../src/api/types.js";
import { childNames } from "../../src/api/meta.js";
import { autoRollout, type AutoRollout } from "./auto-rollout.js";
import { runController, type TestController } from "./controller.js";
import { startTestExporter, TEST_METRICS, type TestExporter } from "./exporter.js";
import { canaryApps, createTestNamespace, eventually, testKubeConfig } from "./kube.js";
import { RolloutRecorder, rolloutTimings, TimingLog, type RolloutTimings } from "./rollout-recorder.js";

/** The analysis interval of the rollout tests: short, and still two scrapes of a 1 s Prometheus. */
export const INTERVAL_SECONDS = 2;
/** The route of a test promoted step by step with the default steps (10 % to 50 %), as [primary, secondary] pairs. */
export const PROMOTED_STEP_BY_STEP: [number, number][] = [
  [100, 0],
  [90, 10],
  [80, 20],
  [70, 30],
  [60, 40],
  [50, 50],
  [100, 0],
];

export const INTERVAL_MS = INTERVAL_SECONDS * 1000;

/** The threshold check on the app's error series: any error fails the step. */
export const ERRORS_CHECK = { name: "errors", query: `max(${TEST_METRICS.errors}{app="{{name}}"})`, max: 0 };
/** The threshold check on the app's latency series. */
export const LATENCY_CHECK = { name: "latency", query: `max(${TEST_METRICS.latency}{app="{{name}}"})`, max: 500 };
/**
 * The evidence of traffic the rollout tests give: a gauge the exporter holds at 1000 requests (deployApp),
 * so that the checks under test decide. Tests of the evidence itself use Istio's series instead.
 */
export const TRAFFIC_QUERY = `max(${TEST_METRICS.requests}{app="{{name}}"})`;
/** The seed-style check: a non-empty result (an error series above 0) fails the step. */
export const SEED_QUERY = `${TEST_METRICS.errors}{app="{{name}}"} > 0`;

/**
 * Everything a rollout test runs against: a namespace on the real API server, a stand-in for the Deployment
 * controller, an exporter whose values the test sets, a real Prometheus scraping it every second, and
 * (unless asked otherwise) the controller in this process.
 */
export interface RolloutEnv {
  kc: KubeConfig;
  namespace: string;
  apps: ReturnType<typeof canaryApps>;
  core: CoreV1Api;
  exporter: TestExporter;
  prometheus: RunningPrometheus;
  /** Deployments named here are kept unavailable by the Deployment stand-in. */
  unavailable: Set<string>;
  /** Deployments named here get at most this many pods available from the stand-in (a slow scale-up). */
  podLimits: Map<string, number>;
  deployments: AutoRollout;
  controller: TestController | undefined;
  timings: TimingLog;
  /** Stopped with the env. */
  recorders: RolloutRecorder[];
  stop(): Promise<void>;
}

/**
 * `deploymentStandIn: false` on the cluster profile, where kube-controller-manager rolls Deployments out and
 * kwok's pods report their status: the stand-in would mark Deployments available before any pod exists.
 */
export async function startRolloutEnv(
  prefix: string,
  options: { controller?: boolean; deploymentStandIn?: boolean } = {},
): Promise<RolloutEnv> {
  const kc = testKubeConfig();
  const namespace = await createTestNamespace(kc, prefix);
  const exporter = await startTestExporter();
  const prometheus = await startPrometheus({ targets: [exporter.target], scrapeIntervalSeconds: 1 });
  await untilScraping(prometheus);
  const unavailable = new Set<string>();
  const podLimits = new Map<string, number>();
  const deployments =
    options.deploymentStandIn === false
      ? noStandIn()
      : autoRollout(kc, namespace, {
          available: (name) => !unavailable.has(name),
          limit: (name) => podLimits.get(name),
        });
  const controller = options.controller === false ? undefined : runController(namespace);
  const recorders: RolloutRecorder[] = [];
  return {
    kc,
    namespace,
    apps: canaryApps(kc, namespace),
    core: kc.makeApiClient(CoreV1Api),
    exporter,
    prometheus,
    unavailable,
    podLimits,
    deployments,
    controller,
    timings: new TimingLog(),
    recorders,
    stop: async () => {
      for (const recorder of recorders) recorder.stop();
      await controller?.stop();
      await deployments.stop();
      await prometheus.stop();
      await exporter.stop();
    },
  };
}

function noStandIn(): AutoRollout {
  return { marked: new Map(), lastError: () => undefined, stop: () => Promise.resolve() };
}

/**
 * Resolves once Prometheus has scraped its targets (its `up` series is 1). Prometheus hands new targets to
 * its scrapers at most every 5 s, so a query made sooner finds no data; no test should start before.
 */
export async function untilScraping(prometheus: RunningPrometheus, timeoutMs = 30_000): Promise<void> {
  await eventually(
    `${prometheus.url} scraping its targets`,
    async () => {
      const response = await fetch(`${prometheus.url}/api/v1/query?query=${encodeURIComponent("min(up)")}`);
      const body = (await response.json()) as { data?: { result?: { value?: [number, string] }[] } };
      return body.data?.result?.[0]?.value?.[1] === "1" ? true : undefined;
    },
    { timeoutMs, intervalMs: 200 },
  );
}

/** A tag of the app's own image repository. */
export function image(name: string, tag: string): string {
  return `registry.example.com/canary/${name}:${tag}`;
}

/**
 * A CanaryApp spec for the rollout tests: image v1, the env's Prometheus, a 2 s interval, 10 % steps up to
 * 50 %, one failed check rolls back, the errors threshold check, the exporter's gauge as the evidence of
 * traffic. `analysis` fields replace the defaults.
 */
export function appSpec(
  env: Pick<RolloutEnv, "prometheus">,
  name: string,
  analysis: AnalysisSpec = {},
  spec: Partial<CanaryAppSpec> = {},
): CanaryAppSpec {
  return {
    image: image(name, "v1"),
    imageListenPort: 8080,
    replicas: 1,
    testReplicas: 1,
    prometheusURL: env.prometheus.url,
    analysis: {
      interval: `${INTERVAL_SECONDS}s`,
      stepWeight: 10,
      maxWeight: 50,
      threshold: 1,
      metrics: [ERRORS_CHECK],
      trafficQuery: TRAFFIC_QUERY,
      ...analysis,
    },
    ...spec,
  };
}

/**
 * Creates the app with healthy exporter series (no errors, 120 ms latency), follows it with a recorder,
 * and waits until its first image runs on the primary (phase Healthy).
 */
export async function deployApp(env: RolloutEnv, name: string, spec: CanaryAppSpec): Promise<RolloutRecorder> {
  env.exporter.set(TEST_METRICS.errors, name, 0);
  env.exporter.set(TEST_METRICS.latency, name, 120);
  env.exporter.set(TEST_METRICS.requests, name, 1000);
  const recorder = await RolloutRecorder.start(env.kc, env.namespace, name);
  env.recorders.push(recorder);
  await env.apps.create({ metadata: { name }, spec });
  await recorder.until(`${name} Healthy on ${spec.image}`, (r) =>
    r.app?.status?.phase === "Healthy" && r.currentWeights()?.primary === 100 && r.currentPrimary() === spec.image
      ? true
      : undefined,
  );
  return recorder;
}

/** A spec change as the API server accepted it. */
export interface Patched {
  /** When the API server answered (ms). */
  at: number;
  /** The app's generation after the change. */
  generation: number;
}

/** Patches spec.image. */
export async function changeImage(env: RolloutEnv, name: string, to: string): Promise<Patched> {
  const app = await env.apps.patchSpec(name, { image: to });
  return { at: Date.now(), generation: app.metadata.generation ?? 0 };
}

/**
 * Waits until the app rests again after `patched`: the status is of that generation or later, no test
 * runs, all traffic is on the primary, the secondary is gone, and the phase is `phase` (Healthy: with
 * spec.image on the primary).
 */
export function untilSettled(
  recorder: RolloutRecorder,
  phase: "Healthy" | "Failed",
  patched: Pick<Patched, "generation">,
  timeoutMs = 60_000,
): Promise<CanaryAppStatus> {
  return recorder.until(
    `${recorder.name} settled in phase ${phase}`,
    (r) => {
      const app = r.app;
      const status = app?.status;
      if (app === undefined || status === undefined) return undefined;
      const current =
        (app.metadata.generation ?? 0) >= patched.generation && (status.observedGeneration ?? 0) >= patched.generation;
      const onPrimary =
        phase !== "Healthy" || (status.primaryImage === app.spec.image && r.currentPrimary() === app.spec.image);
      return current &&
        onPrimary &&
        status.phase === phase &&
        status.canary === undefined &&
        r.currentWeights()?.primary === 100 &&
        r.currentSecondary() === null
        ? status
        : undefined;
    },
    timeoutMs,
  );
}

/** Waits until the route gives the secondary `weight` percent. */
export function untilWeight(recorder: RolloutRecorder, weight: number, timeoutMs = 30_000): Promise<number> {
  return recorder.until(
    `${recorder.name} at ${weight}% on the secondary`,
    (r) => (r.currentWeights()?.secondary === weight ? Date.now() : undefined),
    timeoutMs,
  );
}

/** The timings of one test, added to the env's log. */
export function recordTimings(env: RolloutEnv, recorder: RolloutRecorder, patched: Patched): RolloutTimings {
  return env.timings.add(rolloutTimings(recorder, patched.at, INTERVAL_MS));
}

export interface AppEvent {
  type: string;
  reason: string;
  message: string;
  count: number;
}

/** The core/v1 Events about the CanaryApp, oldest first. */
export async function appEvents(env: RolloutEnv, name: string): Promise<AppEvent[]> {
  const list = await env.core.listNamespacedEvent({
    namespace: env.namespace,
    fieldSelector: `involvedObject.kind=CanaryApp,involvedObject.name=${name}`,
  });
  return list.items
    .map((e) => ({
      type: e.type ?? "",
      reason: e.reason ?? "",
      message: e.message ?? "",
      count: e.count ?? 1,
      first: new Date(e.firstTimestamp ?? e.eventTime ?? 0).getTime(),
    }))
    .sort((a, b) => a.first - b.first)
    .map(({ first: _first, ...event }) => event);
}

/** Whether the secondary Deployment exists on the API server (not just in a recorder). */
export async function secondaryExists(env: RolloutEnv, name: string): Promise<boolean> {
  try {
    await env.kc
      .makeApiClient(AppsV1Api)
      .readNamespacedDeployment({ namespace: env.namespace, name: childNames(name).secondary });
    return true;
  } catch {
    return false;
  }
}

/** The app as the API server has it. */
export function getApp(env: RolloutEnv, name: string): Promise<CanaryApp> {
  return env.apps.get(name);
}

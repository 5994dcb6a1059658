import { execFile } from "node:child_process";
import { existsSync, readFileSync } from "node:fs";
import { readFile } from "node:fs/promises";
import { join } from "node:path";
import { promisify } from "node:util";
import { AppsV1Api, CoreV1Api, CustomObjectsApi, type V1Deployment, type V1Service } from "@kubernetes/client-node";
import { ManagedProcess } from "../../e2e/cluster/managed-process.js";
import { freePorts } from "../../e2e/cluster/ports.js";
import {
  cacheDir,
  findRepoRoot,
  parseEnvFile,
  PrerequisiteError,
  resolveToolchain,
} from "../../e2e/cluster/toolchain.js";
import {
  appDeployment,
  changeDeploymentImage,
  deploymentOf,
  routeWeights,
  sleep,
  type ObjectView,
  type Peer,
  type PeerContext,
  type Work,
} from "./peer.js";
import type { Seen } from "./watch.js";

/** The pinned Argo Rollouts release (e2e/toolchain/versions.env), built by `make argo-rollouts`. */
export const ARGO_ROLLOUTS_VERSION =
  parseEnvFile(readFileSync(join(findRepoRoot(), "e2e", "toolchain", "versions.env"), "utf8"))[
    "ARGO_ROLLOUTS_VERSION"
  ] ?? "";

/** Where `make argo-rollouts` puts the controller and the CRDs of its module. */
export function argoRolloutsFiles(): { binary: string; crds: string } {
  const dir = join(cacheDir(), `argo-rollouts-v${ARGO_ROLLOUTS_VERSION}`);
  return { binary: join(dir, "rollouts-controller"), crds: join(dir, "crds.yaml") };
}

export function argoRolloutsBuilt(): boolean {
  const { binary, crds } = argoRolloutsFiles();
  return existsSync(binary) && existsSync(crds);
}

const run = promisify(execFile);

const ARGO = { group: "argoproj.io", version: "v1alpha1" } as const;
const ISTIO = { group: "networking.istio.io", version: "v1" } as const;
const TEMPLATE = "always-pass";
/** The names the Rollout gives the DestinationRule's two subsets, and the route it edits in the VirtualService. */
export const SUBSETS = { stable: "stable", canary: "canary" } as const;
const ROUTE = "primary";
/**
 * The label Argo Rollouts puts on each ReplicaSet it makes, and into the DestinationRule's subsets, so that a
 * subset selects one ReplicaSet's pods (pkg/apis/rollouts/v1alpha1/types.go, DefaultRolloutUniqueLabelKey).
 */
export const POD_TEMPLATE_HASH = "rollouts-pod-template-hash";

const rollouts = (namespace: string) => `/apis/${ARGO.group}/${ARGO.version}/namespaces/${namespace}/rollouts`;
const replicaSets = (namespace: string) => `/apis/apps/v1/namespaces/${namespace}/replicasets`;
const deployments = (namespace: string) => `/apis/apps/v1/namespaces/${namespace}/deployments`;
const virtualServices = (namespace: string) =>
  `/apis/${ISTIO.group}/${ISTIO.version}/namespaces/${namespace}/virtualservices`;
const destinationRules = (namespace: string) =>
  `/apis/${ISTIO.group}/${ISTIO.version}/namespaces/${namespace}/destinationrules`;

/**
 * The canary steps of `work` as Argo Rollouts writes them: each weight of the others' steps (stepWeight up to
 * maxWeight) held for one interval. After the last pause it promotes: all traffic to the new version.
 */
export function canarySteps(work: Pick<Work, "stepWeight" | "maxWeight" | "intervalSeconds">): object[] {
  const steps: object[] = [];
  for (let weight = work.stepWeight; weight <= work.maxWeight; weight += work.stepWeight) {
    steps.push({ setWeight: weight }, { pause: { duration: `${work.intervalSeconds}s` } });
  }
  return steps;
}

/**
 * The check, as the others': the same constant query on the same Prometheus, passing at >= 0 (Flagger's
 * thresholdRange min 0, canaryapp's min 0), measured every interval; the first failure fails it (failureLimit 0,
 * the others' threshold 1).
 */
export function analysisTemplate(namespace: string, prometheusUrl: string, work: Pick<Work, "intervalSeconds">) {
  return {
    apiVersion: `${ARGO.group}/${ARGO.version}`,
    kind: "AnalysisTemplate",
    metadata: { name: TEMPLATE, namespace },
    spec: {
      metrics: [
        {
          name: TEMPLATE,
          interval: `${work.intervalSeconds}s`,
          failureLimit: 0,
          successCondition: "result[0] >= 0",
          provider: { prometheus: { address: prometheusUrl, query: "vector(100)" } },
        },
      ],
    },
  };
}

/**
 * The objects of one app, as Argo Rollouts' Istio users write them (docs/features/traffic-management/istio.md,
 * subset-level splitting): the app's Deployment, which the Rollout takes its pod template from (workloadRef) and
 * scales down once it is healthy itself; its Service; a DestinationRule with a stable and a canary subset, whose
 * labels the Rollout sets to its ReplicaSets' hashes; a VirtualService whose route it weighs; and the Rollout.
 */
export function argoRolloutsManifests(
  ctx: Pick<PeerContext, "namespace" | "work">,
  app: string,
  image: string,
): [V1Deployment, V1Service, object, object, object] {
  const { namespace, work } = ctx;
  const istio = `${ISTIO.group}/${ISTIO.version}`;
  return [
    appDeployment(namespace, app, image),
    {
      apiVersion: "v1",
      kind: "Service",
      metadata: { name: app, namespace, labels: { app } },
      spec: { selector: { app }, ports: [{ name: "http", port: 8080, targetPort: 8080 }] },
    },
    {
      apiVersion: istio,
      kind: "DestinationRule",
      metadata: { name: app, namespace },
      spec: { host: app, subsets: [{ name: SUBSETS.stable }, { name: SUBSETS.canary }] },
    },
    {
      apiVersion: istio,
      kind: "VirtualService",
      metadata: { name: app, namespace },
      spec: {
        hosts: [app],
        http: [
          {
            name: ROUTE,
            route: [
              { destination: { host: app, subset: SUBSETS.stable }, weight: 100 },
              { destination: { host: app, subset: SUBSETS.canary }, weight: 0 },
            ],
          },
        ],
      },
    },
    {
      apiVersion: `${ARGO.group}/${ARGO.version}`,
      kind: "Rollout",
      metadata: { name: app, namespace },
      spec: {
        replicas: 1,
        selector: { matchLabels: { app } },
        workloadRef: { apiVersion: "apps/v1", kind: "Deployment", name: app, scaleDown: "onsuccess" },
        progressDeadlineSeconds: 600,
        strategy: {
          canary: {
            // Background analysis: one AnalysisRun per rollout, measuring every interval beside the steps.
            analysis: { templates: [{ templateName: TEMPLATE }] },
            trafficRouting: {
              istio: {
                virtualService: { name: app, routes: [ROUTE] },
                destinationRule: { name: app, canarySubsetName: SUBSETS.canary, stableSubsetName: SUBSETS.stable },
              },
            },
            steps: canarySteps(work),
          },
        },
      },
    },
  ];
}

interface RolloutStatus {
  phase?: string;
  stableRS?: string;
  currentPodHash?: string;
}

/** The ReplicaSets the Rollout `app` owns. */
function replicaSetsOf(view: ObjectView, namespace: string, app: string): Seen[] {
  return view
    .list(replicaSets(namespace))
    .filter((rs) => (rs.metadata.ownerReferences ?? []).some((o) => o.kind === "Rollout" && o.name === app));
}

/** The pod-template hash a subset of the DestinationRule selects; undefined before the Rollout set it. */
export function subsetHash(destinationRule: Seen | undefined, subset: string): string | undefined {
  const subsets = (destinationRule?.spec as { subsets?: { name?: string; labels?: Record<string, string> }[] })
    ?.subsets;
  return subsets?.find((s) => s.name === subset)?.labels?.[POD_TEMPLATE_HASH];
}

/** The Rollout's ReplicaSet whose pods a subset of its DestinationRule selects (Istio: host, then subset labels). */
function subsetReplicaSet(view: ObjectView, namespace: string, app: string, subset: string): Seen | undefined {
  const hash = subsetHash(view.get(destinationRules(namespace), app), subset);
  if (hash === undefined) return undefined;
  return replicaSetsOf(view, namespace, app).find((rs) => rs.metadata.labels?.[POD_TEMPLATE_HASH] === hash);
}

/** The fields of an AnalysisRun read here. */
export interface AnalysisRunLike {
  metadata?: { name?: string; ownerReferences?: { kind?: string; name?: string }[] };
  status?: {
    phase?: string;
    metricResults?: { count?: number; successful?: number; measurements?: { value?: string }[] }[];
  };
}

/**
 * What the AnalysisRuns of the Rollouts `apps` measured: how many runs and their phases, how many measurements
 * (the provider's answers: here, Prometheus') passed, and the values seen. Each value is a query's result.
 */
export function summarizeAnalysisRuns(runs: readonly AnalysisRunLike[], apps: readonly string[]): string {
  const ours = runs.filter((r) =>
    (r.metadata?.ownerReferences ?? []).some((o) => o.kind === "Rollout" && apps.includes(o.name ?? "")),
  );
  const phases = new Map<string, number>();
  let count = 0;
  let successful = 0;
  const values = new Set<string>();
  for (const run of ours) {
    const phase = run.status?.phase ?? "(none)";
    phases.set(phase, (phases.get(phase) ?? 0) + 1);
    for (const m of run.status?.metricResults ?? []) {
      count += m.count ?? 0;
      successful += m.successful ?? 0;
      for (const v of m.measurements ?? []) if (v.value !== undefined) values.add(v.value);
    }
  }
  const byPhase = [...phases].map(([p, n]) => `${p} ${n}`).join(", ");
  return (
    `${ours.length} AnalysisRuns${byPhase ? ` (${byPhase})` : ""}: ${count} measurements, ${successful} successful` +
    `${values.size > 0 ? `, values ${[...values].sort().join(" ")}` : ""}`
  );
}

/**
 * Argo Rollouts 1.10 with Istio subset-level traffic routing. Its pods are kwok's; the AnalysisTemplate queries
 * the benchmark's Prometheus.
 */
export const argoRollouts: Peer = {
  name: "argo-rollouts",
  label: `Argo Rollouts ${ARGO_ROLLOUTS_VERSION}`,
  // A pause's duration and a metric's interval are taken as written.
  effectiveIntervalSeconds: (work) => work.intervalSeconds,
  paths: (namespace) => [
    rollouts(namespace),
    deployments(namespace),
    replicaSets(namespace),
    virtualServices(namespace),
    destinationRules(namespace),
  ],

  manifests: (ctx, app, image) => argoRolloutsManifests(ctx, app, image),

  /** Argo Rollouts' CRDs (kubectl, as Flagger's), and the namespace's AnalysisTemplate. */
  prepare: async (ctx) => {
    const { crds } = argoRolloutsFiles();
    if (!existsSync(crds)) throw new PrerequisiteError(`${crds} is missing: run \`make argo-rollouts\` to build it`);
    const kubectl = resolveToolchain().kubectl;
    const env = { ...process.env, KUBECONFIG: ctx.adminKubeconfig };
    await run(kubectl, ["apply", "--server-side", "-f", crds], { env });
    await run(kubectl, ["wait", "--for=condition=Established", "--timeout=60s", "-f", crds], { env });
    await ctx.admin.makeApiClient(CustomObjectsApi).createNamespacedCustomObject({
      ...ARGO,
      plural: "analysistemplates",
      namespace: ctx.namespace,
      body: analysisTemplate(ctx.namespace, ctx.prometheusUrl, ctx.work),
    });
  },

  start: async (ctx) => {
    const { binary } = argoRolloutsFiles();
    if (!existsSync(binary)) {
      throw new PrerequisiteError(`${binary} is missing: run \`make argo-rollouts\` to build it`);
    }
    const [healthz, metrics] = (await freePorts(2)) as [number, number];
    const logPath = join(ctx.logDir, "argo-rollouts.log");
    // POD_NAMESPACE: where it reads its own ConfigMaps and Secrets (utils/defaults, Namespace()), as in a cluster.
    const process = new ManagedProcess(
      "argo-rollouts",
      "/usr/bin/env",
      [
        `POD_NAMESPACE=${ctx.namespace}`,
        binary,
        `--kubeconfig=${ctx.controllerKubeconfig}`,
        "--namespaced",
        `--namespace=${ctx.namespace}`,
        // One replica, as canaryapp (--leader-elect=false) and Flagger (no leader election by default) are run.
        "--leader-elect=false",
        `--healthzPort=${healthz}`,
        `--metricsPort=${metrics}`,
        "--loglevel=info",
      ],
      logPath,
    );
    for (const deadline = Date.now() + 60_000; ;) {
      if (Date.now() > deadline) {
        await process.stop(5_000);
        throw new Error(`argo-rollouts: not ready within 60 s; its log: ${logPath}`);
      }
      if (process.exitStatus !== undefined) throw new Error(`argo-rollouts exited: ${process.describeExit()}`);
      // Its /healthz answers from the start; the log says when its caches synced and its workers run.
      const log = await readFile(logPath, "utf8").catch(() => "");
      if (log.includes("Started controller")) break;
      await sleep(100);
    }
    const pid = process.pid;
    if (pid === undefined) throw new Error("argo-rollouts: the process has no pid");
    return { pid, stop: () => process.stop(5_000) };
  },

  create: async (ctx, app, image) => {
    const [target, service, destinationRule, virtualService, rollout] = argoRolloutsManifests(ctx, app, image);
    const custom = ctx.admin.makeApiClient(CustomObjectsApi);
    const namespace = ctx.namespace;
    await ctx.admin.makeApiClient(AppsV1Api).createNamespacedDeployment({ namespace, body: target });
    await ctx.admin.makeApiClient(CoreV1Api).createNamespacedService({ namespace, body: service });
    await custom.createNamespacedCustomObject({
      ...ISTIO,
      plural: "destinationrules",
      namespace,
      body: destinationRule,
    });
    await custom.createNamespacedCustomObject({ ...ISTIO, plural: "virtualservices", namespace, body: virtualService });
    await custom.createNamespacedCustomObject({ ...ARGO, plural: "rollouts", namespace, body: rollout });
  },

  // As Flagger's: the Deployment's pod template changes; the Rollout follows its workloadRef.
  changeImage: (ctx, app, image) => changeDeploymentImage(ctx, app, image),

  /**
   * Healthy on `image`, the Deployment it took the template from scaled down, and the previous version's
   * ReplicaSet scaled down (after scaleDownDelaySeconds, 30 s by default with traffic routing).
   */
  atRest: (view, namespace, app, image) => {
    const status = view.get(rollouts(namespace), app)?.status as RolloutStatus | undefined;
    if (status?.phase !== "Healthy" || status.stableRS === undefined || status.stableRS !== status.currentPodHash) {
      return false;
    }
    if (deploymentOf(view.get(deployments(namespace), app)).replicas !== 0) return false;
    const others = replicaSetsOf(view, namespace, app).filter(
      (rs) => rs.metadata.labels?.[POD_TEMPLATE_HASH] !== status.stableRS,
    );
    return (
      others.every((rs) => deploymentOf(rs).replicas === 0) && argoRollouts.allTrafficOn(view, namespace, app, image)
    );
  },

  /** The route's stable subset has all the weight, and selects the pods of a ReplicaSet of `image`. */
  allTrafficOn: (view, namespace, app, image) =>
    routeWeights(view.get(virtualServices(namespace), app)).get(SUBSETS.stable) === 100 &&
    deploymentOf(subsetReplicaSet(view, namespace, app, SUBSETS.stable)).image === image,

  scaledUp: (view, namespace, app, image) =>
    replicaSetsOf(view, namespace, app).some((rs) => {
      const seen = deploymentOf(rs);
      return seen.image === image && seen.replicas >= 1;
    }),

  /**
   * The canary subset has weight and selects pods other than the stable subset's: both subsets select the stable
   * pods while no rollout runs, so a weight alone could still go to the old version.
   */
  weighted: (view, namespace, app) => {
    if ((routeWeights(view.get(virtualServices(namespace), app)).get(SUBSETS.canary) ?? 0) === 0) return false;
    const canary = subsetReplicaSet(view, namespace, app, SUBSETS.canary);
    return (
      canary !== undefined &&
      canary !== subsetReplicaSet(view, namespace, app, SUBSETS.stable) &&
      deploymentOf(canary).replicas >= 1
    );
  },

  checks: async (ctx, apps) => {
    const list = (await ctx.admin
      .makeApiClient(CustomObjectsApi)
      .listNamespacedCustomObject({ ...ARGO, plural: "analysisruns", namespace: ctx.namespace })) as {
      items?: AnalysisRunLike[];
    };
    return summarizeAnalysisRuns(list.items ?? [], apps);
  },
};

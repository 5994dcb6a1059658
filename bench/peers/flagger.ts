import { execFile } from "node:child_process";
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { promisify } from "node:util";
import { AppsV1Api, CustomObjectsApi, type V1Deployment } from "@kubernetes/client-node";
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
  type Peer,
  type PeerContext,
} from "./peer.js";

/** The pinned Flagger release (e2e/toolchain/versions.env), built by `make flagger`. */
export const FLAGGER_VERSION =
  parseEnvFile(readFileSync(join(findRepoRoot(), "e2e", "toolchain", "versions.env"), "utf8"))["FLAGGER_VERSION"] ?? "";

/** Where `make flagger` puts the binary and the CRDs of its module. */
export function flaggerFiles(): { binary: string; crds: string } {
  const dir = join(cacheDir(), `flagger-v${FLAGGER_VERSION}`);
  return { binary: join(dir, "flagger"), crds: join(dir, "crd.yaml") };
}

export function flaggerBuilt(): boolean {
  const { binary, crds } = flaggerFiles();
  return existsSync(binary) && existsSync(crds);
}

const run = promisify(execFile);

/** Flagger schedules each canary at its analysis interval, but never more often than every 10 s. */
const FLAGGER_MIN_INTERVAL_SECONDS = 10;
const TEMPLATE = "always-pass";
const FLAGGER = { group: "flagger.app", version: "v1beta1" } as const;
const canaries = (namespace: string) => `/apis/flagger.app/v1beta1/namespaces/${namespace}/canaries`;
const deployments = (namespace: string) => `/apis/apps/v1/namespaces/${namespace}/deployments`;
const virtualServices = (namespace: string) => `/apis/networking.istio.io/v1/namespaces/${namespace}/virtualservices`;

/**
 * Flagger, the CNCF project's canary controller, as its Istio users run it: the app's Deployment plus a Canary
 * (provider istio) whose one check is a MetricTemplate on the same Prometheus with a constant query. Its pods
 * are kwok's, so it sees Deployments become ready as in a cluster; no Envoy, so no Istio metrics, which the
 * constant check does not need.
 */
export const flagger: Peer = {
  name: "flagger",
  label: `Flagger ${FLAGGER_VERSION}`,
  effectiveIntervalSeconds: (work) => Math.max(work.intervalSeconds, FLAGGER_MIN_INTERVAL_SECONDS),
  paths: (namespace) => [canaries(namespace), deployments(namespace), virtualServices(namespace)],

  manifests: (ctx, app, image) => [
    appDeployment(ctx.namespace, app, image),
    {
      apiVersion: `${FLAGGER.group}/${FLAGGER.version}`,
      kind: "Canary",
      metadata: { name: app, namespace: ctx.namespace },
      spec: {
        provider: "istio",
        targetRef: { apiVersion: "apps/v1", kind: "Deployment", name: app },
        progressDeadlineSeconds: 600,
        service: { port: 8080 },
        analysis: {
          interval: `${ctx.work.intervalSeconds}s`,
          threshold: 1,
          stepWeight: ctx.work.stepWeight,
          maxWeight: ctx.work.maxWeight,
          metrics: [{ name: TEMPLATE, templateRef: { name: TEMPLATE }, thresholdRange: { min: 0 }, interval: "1m" }],
        },
      },
    },
  ],

  /** Flagger's CRDs (kubectl: js-yaml rejects the file's folded quoted strings), and the namespace's MetricTemplate. */
  prepare: async (ctx) => {
    const { crds } = flaggerFiles();
    const kubectl = resolveToolchain().kubectl;
    const env = { ...process.env, KUBECONFIG: ctx.adminKubeconfig };
    await run(kubectl, ["apply", "--server-side", "-f", crds], { env });
    await run(kubectl, ["wait", "--for=condition=Established", "--timeout=60s", "-f", crds], { env });
    await ctx.admin.makeApiClient(CustomObjectsApi).createNamespacedCustomObject({
      ...FLAGGER,
      plural: "metrictemplates",
      namespace: ctx.namespace,
      body: {
        apiVersion: `${FLAGGER.group}/${FLAGGER.version}`,
        kind: "MetricTemplate",
        metadata: { name: TEMPLATE, namespace: ctx.namespace },
        spec: { provider: { type: "prometheus", address: ctx.prometheusUrl }, query: "vector(100)" },
      },
    });
  },

  start: async (ctx: PeerContext) => {
    const { binary } = flaggerFiles();
    if (!existsSync(binary)) throw new PrerequisiteError(`${binary} is missing: run \`make flagger\` to build it`);
    const [port] = (await freePorts(1)) as [number];
    const logPath = join(ctx.logDir, "flagger.log");
    const process = new ManagedProcess(
      "flagger",
      binary,
      [
        `-kubeconfig=${ctx.controllerKubeconfig}`,
        "-mesh-provider=istio",
        `-metrics-server=${ctx.prometheusUrl}`,
        `-namespace=${ctx.namespace}`,
        `-port=${port}`,
        "-log-level=info",
      ],
      logPath,
    );
    for (const deadline = Date.now() + 60_000; ;) {
      if (Date.now() > deadline) {
        await process.stop(5_000);
        throw new Error(`flagger: not ready within 60 s; its log: ${logPath}`);
      }
      if (process.exitStatus !== undefined) throw new Error(`flagger exited: ${process.describeExit()}`);
      // Flagger serves /healthz once its caches synced (it starts its HTTP server after that).
      const ready = await fetch(`http://127.0.0.1:${port}/healthz`).catch(() => undefined);
      if (ready?.ok === true) break;
      await sleep(100);
    }
    const pid = process.pid;
    if (pid === undefined) throw new Error("flagger: the process has no pid");
    return { pid, stop: () => process.stop(5_000) };
  },

  create: async (ctx, app, image) => {
    const [target, canary] = flagger.manifests(ctx, app, image) as [V1Deployment, object];
    await ctx.admin.makeApiClient(AppsV1Api).createNamespacedDeployment({ namespace: ctx.namespace, body: target });
    await ctx.admin
      .makeApiClient(CustomObjectsApi)
      .createNamespacedCustomObject({ ...FLAGGER, plural: "canaries", namespace: ctx.namespace, body: canary });
  },

  changeImage: (ctx, app, image) => changeDeploymentImage(ctx, app, image),

  atRest: (view, namespace, app, image) => {
    const phase = (view.get(canaries(namespace), app)?.status as { phase?: string } | undefined)?.phase;
    return (phase === "Initialized" || phase === "Succeeded") && flagger.allTrafficOn(view, namespace, app, image);
  },

  allTrafficOn: (view, namespace, app, image) =>
    deploymentOf(view.get(deployments(namespace), `${app}-primary`)).image === image &&
    routeWeights(view.get(virtualServices(namespace), app)).get(`${app}-primary`) === 100,

  scaledUp: (view, namespace, app, image) => {
    const target = deploymentOf(view.get(deployments(namespace), app));
    return target.image === image && target.replicas >= 1;
  },

  weighted: (view, namespace, app) =>
    (routeWeights(view.get(virtualServices(namespace), app)).get(`${app}-canary`) ?? 0) > 0,
};

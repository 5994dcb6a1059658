import { deployedImage } from "../../src/rollout/subject.js";
import { CustomObjectsApi } from "@kubernetes/client-node";
import { childNames } from "../../src/api/meta.js";
import { GROUP, PLURAL, VERSION, type CanaryApp } from "../../src/api/types.js";
import { readIstioWeights } from "../../src/router/istio.js";
import { MERGE_PATCH } from "../../test/support/kube.js";
import { spawnController } from "../../test/support/process.js";
import { deploymentOf, sleep, type Peer } from "./peer.js";

const apps = (namespace: string) => `/apis/${GROUP}/${VERSION}/namespaces/${namespace}/${PLURAL}`;
const deployments = (namespace: string) => `/apis/apps/v1/namespaces/${namespace}/deployments`;
const virtualServices = (namespace: string) => `/apis/networking.istio.io/v1/namespaces/${namespace}/virtualservices`;

/** canaryapp, the controller of this repository, run as its own process (as in a cluster), one CanaryApp per app. */
export const canaryapp: Peer = {
  name: "canaryapp",
  label: "canaryapp",
  effectiveIntervalSeconds: (work) => work.intervalSeconds,
  paths: (namespace) => [apps(namespace), deployments(namespace), virtualServices(namespace)],

  manifests: (ctx, app, image) => [
    {
      apiVersion: `${GROUP}/${VERSION}`,
      kind: "CanaryApp",
      metadata: { name: app, namespace: ctx.namespace },
      spec: {
        image,
        imageListenPort: 8080,
        replicas: 1,
        testReplicas: 1,
        prometheusURL: ctx.prometheusUrl,
        analysis: {
          interval: `${ctx.work.intervalSeconds}s`,
          stepWeight: ctx.work.stepWeight,
          maxWeight: ctx.work.maxWeight,
          threshold: 1,
          // The always-passing check, as Flagger's below; no traffic flows here, so none is required.
          requireTraffic: false,
          metrics: [{ name: "always-pass", query: "vector(100)", min: 0 }],
        },
      },
    } satisfies CanaryApp,
  ],

  prepare: () => Promise.resolve(),

  start: async (ctx) => {
    const flags = [`--kubeconfig=${ctx.controllerKubeconfig}`, `--namespaces=${ctx.namespace}`, "--leader-elect=false"];
    const controller = spawnController(flags, "bench-peers");
    // Ready once it serves /readyz with OK (its caches are synced).
    for (const deadline = Date.now() + 60_000; ;) {
      if (Date.now() > deadline) {
        await controller.kill("SIGTERM");
        throw new Error(`canaryapp: not ready within 60 s: ${JSON.stringify(controller.logs.slice(-3))}`);
      }
      const ready = await fetch(`http://127.0.0.1:${await controller.port()}/readyz`).catch(() => undefined);
      if (ready?.status === 200) break;
      await sleep(50);
    }
    const pid = controller.child.pid;
    if (pid === undefined) throw new Error("canaryapp: the controller process has no pid");
    return {
      pid,
      stop: async () => {
        await controller.kill("SIGTERM");
      },
    };
  },

  create: async (ctx, app, image) => {
    const [body] = canaryapp.manifests(ctx, app, image);
    await ctx.admin
      .makeApiClient(CustomObjectsApi)
      .createNamespacedCustomObject({ group: GROUP, version: VERSION, plural: PLURAL, namespace: ctx.namespace, body });
  },

  changeImage: async (ctx, app, image) => {
    await ctx.admin.makeApiClient(CustomObjectsApi).patchNamespacedCustomObject(
      {
        group: GROUP,
        version: VERSION,
        plural: PLURAL,
        namespace: ctx.namespace,
        name: app,
        body: { spec: { image } },
      },
      MERGE_PATCH,
    );
  },

  atRest: (view, namespace, app, image) =>
    (view.get(apps(namespace), app) as CanaryApp | undefined)?.status?.phase === "Healthy" &&
    canaryapp.allTrafficOn(view, namespace, app, image),

  allTrafficOn: (view, namespace, app, image) => {
    const status = (view.get(apps(namespace), app) as CanaryApp | undefined)?.status;
    const weights = readIstioWeights(view.get(virtualServices(namespace), childNames(app).virtualService));
    return (
      status?.primaryImage === image &&
      // The primary is pinned to the digest the tested pods ran, when they reported one.
      deploymentOf(view.get(deployments(namespace), childNames(app).primary)).image ===
        deployedImage(image, status.primary?.image === image ? status.primary.digest : undefined) &&
      weights?.primary === 100
    );
  },

  scaledUp: (view, namespace, app, image) => {
    const secondary = deploymentOf(view.get(deployments(namespace), childNames(app).secondary));
    return secondary.image === image && secondary.replicas >= 1;
  },

  weighted: (view, namespace, app) =>
    (readIstioWeights(view.get(virtualServices(namespace), childNames(app).virtualService))?.secondary ?? 0) > 0,
};

/**
 * The mesh traffic simulator against a real API server, scraped by a real Prometheus, queried with the
 * controller's own metrics provider and built-in queries: the weights that reach Prometheus are the ones
 * in the VirtualService, only Ready pods get traffic, and the per-image behaviour shows in the built-in
 * metrics. The objects are made as the controller makes them (per-track Services as the route's
 * destinations, ADR 0010) and the pods as a Deployment's ReplicaSet would. Each request that reaches a pod
 * is reported by both sidecars, so every count below picks one reporter (docs/istio-telemetry.md). Runs
 * under `make test-integration` (api profile: no kubelet, so pods are made Ready through their /status
 * subresource).
 */
import assert from "node:assert/strict";
import { randomBytes, randomUUID } from "node:crypto";
import { after, before, describe, test } from "node:test";
import { AppsV1Api, CoreV1Api, CustomObjectsApi, type V1Pod } from "@kubernetes/client-node";
import { startPrometheus, type RunningPrometheus } from "../../e2e/prometheus.js";
import { startSimulator, type Simulator } from "../../e2e/sim/simulator.js";
import { PrometheusProvider } from "../../src/analysis/providers/prometheus/client.js";
import { BUILTIN_QUERIES, renderQuery } from "../../src/analysis/templates.js";
import { testKubeConfig } from "../support/kube.js";
import { waitFor } from "../../e2e/cluster/wait.js";

const kc = testKubeConfig();
const core = kc.makeApiClient(CoreV1Api);
const apps = kc.makeApiClient(AppsV1Api);
const custom = kc.makeApiClient(CustomObjectsApi);

const namespace = `sim-${randomBytes(3).toString("hex")}`;
const app = "web";
const vsRef = { group: "networking.istio.io", version: "v1", plural: "virtualservices", namespace } as const;
type Track = "primary" | "secondary";
/** The pod-template-hash of each track's ReplicaSet. */
const HASH: Record<Track, string> = { primary: "6b8d5c7f9", secondary: "5f7c9d8b6" };

const labels = (track?: Track) => ({
  "app.kubernetes.io/managed-by": "canaryapp",
  "canaryapp.io/app": app,
  ...(track ? { "canaryapp.io/track": track } : {}),
});

/** The controller's route since ADR 0010: the per-track Services as destinations. */
function virtualService(primary: number, secondary: number, resourceVersion?: string): object {
  const host = `${app}.${namespace}.svc.cluster.local`;
  const destination = (track: Track, weight: number) => ({
    destination: { host: `${app}-${track}.${namespace}.svc.cluster.local`, port: { number: 80 } },
    weight,
  });
  return {
    apiVersion: "networking.istio.io/v1",
    kind: "VirtualService",
    metadata: { name: app, namespace, labels: labels(), ...(resourceVersion ? { resourceVersion } : {}) },
    spec: {
      hosts: [app, host],
      gateways: ["mesh"],
      http: [
        { name: "primary-secondary", route: [destination("primary", primary), destination("secondary", secondary)] },
      ],
    },
  };
}

async function setWeights(primary: number, secondary: number): Promise<void> {
  const current = (await custom.getNamespacedCustomObject({ ...vsRef, name: app })) as {
    metadata: { resourceVersion: string };
  };
  await custom.replaceNamespacedCustomObject({
    ...vsRef,
    name: app,
    body: virtualService(primary, secondary, current.metadata.resourceVersion),
  });
}

/** `<app>` selects the primary's pods (ADR 0010); `<app>-<track>` selects the track's. */
async function createService(name: string, track: Track): Promise<void> {
  await core.createNamespacedService({
    namespace,
    body: {
      metadata: { name, namespace, labels: labels(name === app ? undefined : track) },
      spec: {
        selector: { "canaryapp.io/app": app, "canaryapp.io/track": track },
        ports: [{ name: "http", port: 80, targetPort: 8080, protocol: "TCP", appProtocol: "http" }],
      },
    },
  });
}

/** The pod template's labels, as the controller writes them. */
const podLabels = (track: Track) => ({
  ...labels(track),
  app,
  version: track,
  "service.istio.io/canonical-name": app,
  "service.istio.io/canonical-revision": track,
});

async function createDeployment(track: Track): Promise<void> {
  const selector = { "canaryapp.io/app": app, "canaryapp.io/track": track };
  await apps.createNamespacedDeployment({
    namespace,
    body: {
      metadata: { name: `${app}-${track}`, namespace, labels: labels(track) },
      spec: {
        replicas: 1,
        selector: { matchLabels: selector },
        template: {
          metadata: { labels: podLabels(track) },
          spec: { containers: [{ name: "app", image: "sample-app:v1" }] },
        },
      },
    },
  });
}

/**
 * A pod as the Deployment's ReplicaSet would make it (generated name, owner, template hash), then marked
 * Ready (or not) through /status, as a kubelet would. No garbage collector runs on this profile, so the
 * owner need not exist.
 */
async function createPod(track: Track, name: string, image: string, ready: boolean): Promise<void> {
  const replicaSet = `${app}-${track}-${HASH[track]}`;
  await core.createNamespacedPod({
    namespace,
    body: {
      metadata: {
        name,
        generateName: `${replicaSet}-`,
        namespace,
        labels: { ...podLabels(track), "pod-template-hash": HASH[track] },
        ownerReferences: [
          { apiVersion: "apps/v1", kind: "ReplicaSet", name: replicaSet, uid: randomUUID(), controller: true },
        ],
      },
      spec: { automountServiceAccountToken: false, containers: [{ name: "app", image }] },
    },
  });
  await setReady(name, ready);
}

async function setReady(name: string, ready: boolean): Promise<void> {
  const pod: V1Pod = await core.readNamespacedPodStatus({ name, namespace });
  const now = new Date();
  pod.status = {
    ...pod.status,
    phase: "Running",
    conditions: [
      { type: "PodScheduled", status: "True", lastTransitionTime: now },
      { type: "Ready", status: ready ? "True" : "False", lastTransitionTime: now },
      { type: "ContainersReady", status: ready ? "True" : "False", lastTransitionTime: now },
    ],
  };
  await core.replaceNamespacedPodStatus({ name, namespace, body: pod });
}

/** Polls `probe` until it has a value (errors count as "not yet"); the shared wait of the test clusters. */
const eventually = <T>(what: string, probe: () => Promise<T | undefined>, timeoutMs = 30_000): Promise<T> =>
  waitFor(what, probe, { timeoutMs, intervalMs: 250 });

describe("mesh traffic simulator against the API server and Prometheus", () => {
  let prometheus: RunningPrometheus;
  let simulator: Simulator;
  let metrics: PrometheusProvider;
  const vars = {
    name: app,
    namespace,
    primary: `${app}-primary`,
    secondary: `${app}-secondary`,
    service: app,
    interval: "10s",
    stepWindow: "10s",
    stepStart: "0",
    primaryRevision: "primary",
    secondaryRevision: "secondary",
    track: "secondary" as const,
    workload: `${app}-secondary`,
    revision: "secondary",
  };

  /** One number from Prometheus, or undefined while the query has no result. */
  const value = async (promql: string): Promise<number | undefined> => {
    const outcome = await metrics.query(promql);
    return outcome.kind === "value" ? outcome.value : undefined;
  };
  /** Requests as `reporter` counts them (each request that reaches a pod is counted by both). */
  const requestsTo = (selector: string, reporter = "destination") =>
    value(`sum(istio_requests_total{reporter="${reporter}",destination_service_namespace="${namespace}"${selector}})`);

  before(async () => {
    await core.createNamespace({ body: { metadata: { name: namespace } } });
    // No kube-controller-manager makes it on this profile, and the ServiceAccount admission plugin wants it.
    await core.createNamespacedServiceAccount({ namespace, body: { metadata: { name: "default", namespace } } });
    await custom.createNamespacedCustomObject({ ...vsRef, body: virtualService(80, 20) });
    await createService(app, "primary");
    await createService(`${app}-primary`, "primary");
    await createService(`${app}-secondary`, "secondary");
    await createDeployment("primary");
    await createDeployment("secondary");
    await createPod("primary", `${app}-primary-a`, "sample-app:v1", true);
    await createPod("primary", `${app}-primary-b`, "sample-app:v1", true);
    await createPod("secondary", `${app}-secondary-a`, "sample-app:v2", true);
    // Not Ready: must never be sent anything.
    await createPod("secondary", `${app}-secondary-starting`, "sample-app:v2", false);

    prometheus = await startPrometheus({ targets: [], handleSignals: false });
    simulator = await startSimulator({ kubeconfig: kc, namespaces: [namespace], rps: 40, seed: 11 });
    await prometheus.setTargets([simulator.target]);
    metrics = new PrometheusProvider({ endpoint: prometheus.url, timeoutMs: 5_000 });
  });

  after(async () => {
    await simulator?.stop();
    await prometheus?.stop();
    // Without kube-controller-manager the namespace stays Terminating; the cluster is thrown away anyway.
    await core.deleteNamespace({ name: namespace });
  });

  test("traffic follows the VirtualService's weights, to Ready pods only", async () => {
    const total = await eventually("300 requests in Prometheus", async () => {
      const n = await requestsTo("");
      return n !== undefined && n >= 300 ? n : undefined;
    });
    const secondary =
      (await requestsTo(`,destination_canonical_service="${app}",destination_canonical_revision="secondary"`)) ?? 0;
    assert.ok(Math.abs(secondary / total - 0.2) < 0.06, `secondary share in Prometheus: ${secondary}/${total}`);
    assert.equal(await requestsTo(',response_code!="200"'), undefined, "v1 and v2 answer every request");
    assert.equal(
      await requestsTo(`,destination_workload="${app}-secondary"`),
      secondary,
      "attributed to the secondary Deployment (its ReplicaSet's name without the template hash)",
    );
    // The secondary's pods are selected by `<app>-secondary` only, and the route sends to it: no report of
    // theirs names the app's Service `<app>`, on either side.
    assert.equal(
      await requestsTo(`,destination_service_name="${app}-secondary"`),
      secondary,
      "reported against the secondary's Service",
    );
    for (const reporter of ["source", "destination"]) {
      assert.equal(
        await requestsTo(`,destination_service_name="${app}",destination_workload="${app}-secondary"`, reporter),
        undefined,
        `reporter=${reporter}: none of the secondary's requests against the app's Service`,
      );
    }

    const [state] = simulator.state().apps;
    assert.ok(state);
    assert.deepEqual(state.weights, { primary: 80, secondary: 20 });
    assert.deepEqual(state.readyPods, {
      primary: [`${app}-primary-a`, `${app}-primary-b`],
      secondary: [`${app}-secondary-a`],
    });
    assert.deepEqual(state.images, { primary: ["sample-app:v1"], secondary: ["sample-app:v2"] });
    const sent = state.sent.primary.total + state.sent.secondary.total;
    assert.ok(
      Math.abs(state.sent.secondary.total / sent - 0.2) < 0.05,
      `secondary share sent: ${state.sent.secondary.total}/${sent}`,
    );
  });

  test("the built-in queries measure the secondary: all successful, p99 within the simulated latency", async () => {
    const success = await eventually("success rate", () =>
      value(renderQuery(BUILTIN_QUERIES["request-success-rate"], vars)),
    );
    assert.equal(success, 100);
    const p99 = await eventually("p99", () => value(renderQuery(BUILTIN_QUERIES["request-duration"], vars)));
    assert.ok(p99 >= 10 && p99 <= 50, `p99 ${p99} ms (simulated 10–30 ms, bucket bounds 25 and 50)`);
  });

  test("a changed weight and a bad release show up in the metrics", async () => {
    await setWeights(50, 50);
    await setReady(`${app}-secondary-a`, false);
    await createPod("secondary", `${app}-secondary-v3`, "sample-app:v3", true);
    await eventually("the simulator reads 50/50 and the v3 pod", () => {
      const [state] = simulator.state().apps;
      const ok = state?.weights?.secondary === 50 && state.readyPods.secondary.join() === `${app}-secondary-v3`;
      return Promise.resolve(ok ? true : undefined);
    });
    const success = await eventually("success rate 0 over the last 10 s", async () => {
      const rate = await value(renderQuery(BUILTIN_QUERIES["request-success-rate"], vars));
      return rate === 0 ? rate : undefined;
    });
    assert.equal(success, 0);
  });

  test("a destination with weight but no Ready pod answers 503 UH, reported by the caller against its Service", async () => {
    await setReady(`${app}-secondary-v3`, false);
    const uh = await eventually("503 UH in Prometheus", async () => {
      const n = await requestsTo(
        `,response_code="503",response_flags="UH",destination_service_name="${app}-secondary",destination_workload="unknown"`,
        "source",
      );
      return n !== undefined && n > 0 ? n : undefined;
    });
    assert.ok(uh > 0);
    assert.equal(
      await requestsTo(`,response_flags="UH"`),
      undefined,
      "no pod received them: the destination reports none",
    );
    assert.equal(
      await requestsTo(`,response_code="503",destination_service_name!="${app}-secondary"`, "source"),
      undefined,
      "the primary keeps answering",
    );
  });
});

import assert from "node:assert/strict";
import { writeFile } from "node:fs/promises";
import { join } from "node:path";
import { AppsV1Api, CoreV1Api, KubeConfig } from "@kubernetes/client-node";
import { pino } from "pino";
import { waitFor } from "../../e2e/cluster/wait.js";
import type { Kubectl } from "../../e2e/demo/kubectl.js";
import type { CanaryApp } from "../../src/api/types.js";
import { startController } from "../../src/app.js";
import { loadConfig } from "../../src/config.js";
import type { PooledKubeConfig } from "../../src/kube/client.js";
import { statusCodeOf } from "../../src/kube/errors.js";
import { RecordingObserver } from "./controller.js";
import { canaryApps } from "./kube.js";

/** Where config/ and the Helm chart install the controller, and the ServiceAccount it runs as. */
export const SYSTEM_NAMESPACE = "canaryapp-system";
export const SERVICE_ACCOUNT = "canaryapp-controller";

/** Waits out a namespace of that name still being deleted by an earlier test file. */
export async function notTerminating(kc: PooledKubeConfig, name: string, timeoutMs = 90_000): Promise<void> {
  const core = kc.makeApiClient(CoreV1Api);
  await waitFor(
    `Namespace ${name}: not Terminating`,
    () =>
      core.readNamespace({ name }).then(
        (ns) => (ns.status?.phase === "Terminating" ? undefined : true),
        (err: unknown) => (statusCodeOf(err) === 404 ? true : undefined),
      ),
    { timeoutMs, intervalMs: 250 },
  );
}

/** Writes a kubeconfig that authenticates as the installed ServiceAccount, with a token from the TokenRequest API. */
export async function serviceAccountKubeconfig(kc: PooledKubeConfig, kubectl: Kubectl, path: string): Promise<void> {
  const token = (
    await kubectl.run(["-n", SYSTEM_NAMESPACE, "create", "token", SERVICE_ACCOUNT, "--duration=1h"])
  ).trim();
  const cluster = kc.getCurrentCluster();
  if (cluster === null) throw new Error("the test kubeconfig has no current cluster");
  const sa = new KubeConfig();
  sa.loadFromOptions({
    clusters: [cluster],
    users: [{ name: SERVICE_ACCOUNT, token }],
    contexts: [{ name: SERVICE_ACCOUNT, cluster: cluster.name, user: SERVICE_ACCOUNT }],
    currentContext: SERVICE_ACCOUNT,
  });
  await writeFile(path, sa.exportConfig(), { mode: 0o600 });
}

export interface InstalledControllerRun {
  kc: PooledKubeConfig;
  kubectl: Kubectl;
  /** A folder for the ServiceAccount's kubeconfig. */
  scratch: string;
  /** Names the run in waits, files and its lease. */
  label: string;
  /** WATCH_NAMESPACES of the install mode ("" for every namespace). */
  watchNamespaces: string;
  /** The watched namespace the app is created in, and the app's name. */
  namespace: string;
  app: string;
}

/**
 * The controller as an install runs it: authenticated as the installed ServiceAccount (so with exactly its
 * rights) and with the mode's namespaces, it runs a CanaryApp with a labelled credentials Secret to Healthy:
 * no invalid spec, the lease in canaryapp-system held, the primary on the app's image, Events written. Then
 * the controller stops and the app and Secret are deleted.
 */
export async function installedControllerRunsAnApp(run: InstalledControllerRun): Promise<void> {
  const { kc, namespace, app: name } = run;
  const core = kc.makeApiClient(CoreV1Api);
  const kubeconfig = join(run.scratch, `${run.label}.kubeconfig`);
  await serviceAccountKubeconfig(kc, run.kubectl, kubeconfig);
  const config = loadConfig(
    [
      `--kubeconfig=${kubeconfig}`,
      "--http-address=127.0.0.1:0",
      `--lease-namespace=${SYSTEM_NAMESPACE}`,
      `--lease-name=canaryapp-${run.label}`,
      // As the manifests run it: sharded, so the Lease rights sharding needs (list, delete) are exercised too.
      "--shards=32",
    ],
    { WATCH_NAMESPACES: run.watchNamespaces },
  );
  const controller = startController({ config, log: pino({ level: "silent" }), observer: new RecordingObserver() });
  const secret = `${name}-prom-creds`;
  const image = `registry.example.com/${name}:v1`;
  const apps = canaryApps(kc, namespace);
  // The app's Prometheus is a Service of its own namespace, allowed by the default *.svc policy: the controller
  // reads it, with the installed rights, to see that it is a ClusterIP Service with a selector.
  const prometheus = `${name}-prometheus`;
  const prometheusURL = `https://${prometheus}.${namespace}.svc:9090`;
  try {
    await core.createNamespacedService({
      namespace,
      body: {
        metadata: { name: prometheus },
        spec: { selector: { app: prometheus }, ports: [{ port: 9090 }] },
      },
    });
    await core.createNamespacedSecret({
      namespace,
      body: {
        metadata: {
          name: secret,
          labels: { "canaryapp.io/prometheus-credentials": "true" },
          annotations: { "canaryapp.io/allowed-urls": prometheusURL },
        },
        stringData: { token: "not-used-until-a-rollout" },
      },
    });
    await apps.create({
      metadata: { name },
      spec: {
        image,
        imageListenPort: 8080,
        replicas: 1,
        testReplicas: 1,
        prometheusURL,
        prometheus: { secretRef: { name: secret } },
      },
    });
    const status = await waitFor(
      `${run.label}: CanaryApp ${namespace}/${name} Healthy`,
      async () => {
        const current: CanaryApp = await apps.get(name);
        return current.status?.phase === "Healthy" ? current.status : undefined;
      },
      { timeoutMs: 90_000, intervalMs: 250 },
    );
    assert.equal(status.conditions?.find((c) => c.type === "InvalidSpec")?.status, "False");
    assert.equal(controller.isLeader(), true, "shares were taken on Leases in canaryapp-system");
    const primary = await kc.makeApiClient(AppsV1Api).readNamespacedDeployment({ namespace, name: `${name}-primary` });
    assert.equal(primary.spec?.template.spec?.containers[0]?.image, image);
    const events = await core.listNamespacedEvent({
      namespace,
      fieldSelector: `involvedObject.kind=CanaryApp,involvedObject.name=${name}`,
    });
    assert.ok(
      events.items.some((e) => e.reason === "Created"),
      "the controller recorded Events",
    );
  } finally {
    await controller.stop();
  }
  await apps.delete(name);
  await core.deleteNamespacedSecret({ namespace, name: secret });
  await core.deleteNamespacedService({ namespace, name: prometheus });
}

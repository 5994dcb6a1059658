/**
 * Both install modes on the full local cluster: `kubectl kustomize config/<mode> | kubectl apply
 * --server-side -f -`, the controller Deployment rolls out, and the controller, authenticated as the
 * ServiceAccount the mode installs (so with exactly its rights), runs a CanaryApp in the watched namespace
 * with a labelled credentials Secret: children applied, primary Ready, Events written, lease held. Then the
 * user roles: config/user-roles aggregates into Kubernetes' edit and view, so a namespace's editors and
 * viewers use CanaryApps without another binding.
 */
import assert from "node:assert/strict";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { AppsV1Api, CoreV1Api, KubeConfig } from "@kubernetes/client-node";
import { pino } from "pino";
import type { CanaryApp } from "../src/api/types.js";
import { startController, type RunningController } from "../src/app.js";
import { loadConfig } from "../src/config.js";
import { statusCodeOf } from "../src/kube/errors.js";
import { RecordingObserver } from "../test/support/controller.js";
import { canaryApps, testKubeConfig, testKubeConfigPath } from "../test/support/kube.js";
import { deleteObjects, kustomize, type Manifest } from "../test/support/rbac.js";
import { findRepoRoot } from "./cluster/toolchain.js";
import { waitFor } from "./cluster/wait.js";
import { Kubectl, toolchainKubectl } from "./demo/kubectl.js";

const kc = testKubeConfig();
const core = kc.makeApiClient(CoreV1Api);
const apps = kc.makeApiClient(AppsV1Api);
const kubectl = new Kubectl(toolchainKubectl(), testKubeConfigPath());
const repoRoot = findRepoRoot();
const SYSTEM_NAMESPACE = "canaryapp-system";
const SERVICE_ACCOUNT = "canaryapp-controller";
/** The namespace config/namespaced watches. */
const WATCHED = "team-a";

/** Waits out a namespace of that name still being deleted by an earlier test. */
async function notTerminating(name: string): Promise<void> {
  await waitFor(
    `Namespace ${name}: not Terminating`,
    () =>
      core.readNamespace({ name }).then(
        (ns) => (ns.status?.phase === "Terminating" ? undefined : true),
        (err: unknown) => (statusCodeOf(err) === 404 ? true : undefined),
      ),
    { timeoutMs: 90_000, intervalMs: 250 },
  );
}

async function ensureNamespace(name: string): Promise<void> {
  await notTerminating(name);
  await core.createNamespace({ body: { metadata: { name } } }).catch((err: unknown) => {
    if (statusCodeOf(err) !== 409) throw err;
  });
}

/** A kubeconfig that authenticates as the mode's ServiceAccount, with a token from the TokenRequest API. */
async function serviceAccountKubeconfig(path: string): Promise<void> {
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

const MODES = [
  // Cluster-wide: the controller watches every namespace.
  { name: "cluster-wide", dir: "config/default", namespaces: "" },
  { name: "namespaced", dir: "config/namespaced", namespaces: WATCHED },
];

describe("install modes", () => {
  let scratch: string;
  let installed: Manifest[] = [];
  let controller: RunningController | undefined;

  before(async () => {
    scratch = await mkdtemp(join(tmpdir(), "canaryapp-modes-"));
  });
  after(async () => {
    await controller?.stop();
    await canaryApps(kc, WATCHED)
      .delete("modes")
      .catch(() => undefined);
    await deleteObjects(
      kubectl,
      installed.filter((o) => o.kind !== "CustomResourceDefinition"),
    ).catch(() => undefined);
    await rm(scratch, { recursive: true, force: true });
  });

  for (const mode of MODES) {
    test(
      `${mode.name}: kubectl kustomize ${mode.dir} | kubectl apply --server-side -f - installs a working controller`,
      {
        timeout: 240_000,
      },
      async () => {
        await notTerminating(SYSTEM_NAMESPACE);
        await ensureNamespace(WATCHED);
        const objects = await kustomize(kubectl, repoRoot, mode.dir);
        installed = objects;
        const applied = await kubectl.shell(
          `kubectl kustomize ${mode.dir} | kubectl apply --server-side -f -`,
          repoRoot,
        );
        for (const line of applied.trim().split("\n")) assert.match(line, / serverside-applied$/, applied);
        assert.equal(
          objects.some((o) => o.kind === "ClusterRole" || o.kind === "ClusterRoleBinding"),
          mode.name === "cluster-wide",
          "only the cluster-wide mode grants cluster-wide rights",
        );

        const deployment = await waitFor(
          `Deployment ${SYSTEM_NAMESPACE}/canaryapp-controller: Available`,
          async () => {
            const d = await apps.readNamespacedDeployment({
              namespace: SYSTEM_NAMESPACE,
              name: "canaryapp-controller",
            });
            const available = d.status?.conditions?.find((c) => c.type === "Available")?.status === "True";
            return available ? d : undefined;
          },
          { timeoutMs: 90_000, intervalMs: 250 },
        );
        const env = deployment.spec?.template.spec?.containers[0]?.env ?? [];
        assert.equal(env.find((e) => e.name === "WATCH_NAMESPACES")?.value, mode.namespaces || undefined);

        // The controller, with the ServiceAccount's token and the mode's namespaces, as the Deployment runs it.
        const kubeconfig = join(scratch, `${mode.name}.kubeconfig`);
        await serviceAccountKubeconfig(kubeconfig);
        const config = loadConfig(
          [
            `--kubeconfig=${kubeconfig}`,
            "--http-address=127.0.0.1:0",
            `--lease-namespace=${SYSTEM_NAMESPACE}`,
            `--lease-name=canaryapp-e2e-${mode.name}`,
          ],
          { WATCH_NAMESPACES: mode.namespaces },
        );
        controller = startController({ config, log: pino({ level: "silent" }), observer: new RecordingObserver() });

        await core.createNamespacedSecret({
          namespace: WATCHED,
          body: {
            metadata: { name: "prom-creds", labels: { "canaryapp.io/prometheus-credentials": "true" } },
            stringData: { token: "not-used-until-a-rollout" },
          },
        });
        const app = canaryApps(kc, WATCHED);
        await app.create({
          metadata: { name: "modes" },
          spec: {
            image: "registry.example.com/modes:v1",
            imageListenPort: 8080,
            replicas: 1,
            testReplicas: 1,
            prometheusURL: "http://prometheus.monitoring.svc:9090",
            prometheus: { secretRef: { name: "prom-creds" } },
          },
        });
        const status = await waitFor(
          `${mode.name}: CanaryApp ${WATCHED}/modes Healthy`,
          async () => {
            const current: CanaryApp = await app.get("modes");
            return current.status?.phase === "Healthy" ? current.status : undefined;
          },
          { timeoutMs: 90_000, intervalMs: 250 },
        );
        assert.equal(status.conditions?.find((c) => c.type === "InvalidSpec")?.status, "False");
        assert.equal(controller.isLeader(), true, "the lease in canaryapp-system was taken");
        const events = await core.listNamespacedEvent({
          namespace: WATCHED,
          fieldSelector: "involvedObject.kind=CanaryApp,involvedObject.name=modes",
        });
        assert.ok(
          events.items.some((e) => e.reason === "Created"),
          "the controller recorded Events",
        );

        await controller.stop();
        controller = undefined;
        await app.delete("modes");
        await core.deleteNamespacedSecret({ namespace: WATCHED, name: "prom-creds" });
        await deleteObjects(
          kubectl,
          objects.filter((o) => o.kind !== "CustomResourceDefinition"),
        );
        installed = [];
      },
    );
  }

  test(
    "config/user-roles: a namespace's editors use CanaryApps, its viewers read them, through aggregation",
    {
      timeout: 120_000,
    },
    async () => {
      await ensureNamespace(WATCHED);
      const roles = await kustomize(kubectl, repoRoot, "config/user-roles");
      installed = roles;
      await kubectl.shell("kubectl kustomize config/user-roles | kubectl apply --server-side -f -", repoRoot);
      await kubectl.run(["create", "rolebinding", "bob-edit", "-n", WATCHED, "--clusterrole=edit", "--user=bob"]);
      await kubectl.run(["create", "rolebinding", "carol-view", "-n", WATCHED, "--clusterrole=view", "--user=carol"]);
      try {
        const canI = (user: string, verb: string, subresource?: string) =>
          kubectl
            .run([
              "auth",
              "can-i",
              verb,
              "canaryapps.canaryapp.io",
              ...(subresource ? [`--subresource=${subresource}`] : []),
              "-n",
              WATCHED,
              "--as",
              user,
            ])
            .then((out) => out.trim())
            .catch(() => "no");
        // The controller manager aggregates the rules into edit and view.
        await waitFor(
          "edit and view aggregated",
          async () => ((await canI("bob", "create")) === "yes" && (await canI("carol", "get")) === "yes") || undefined,
          { timeoutMs: 60_000, intervalMs: 250 },
        );
        assert.equal(await canI("bob", "patch"), "yes");
        assert.equal(await canI("bob", "delete"), "yes");
        assert.equal(await canI("bob", "get", "status"), "yes");
        assert.equal(await canI("bob", "update", "status"), "no");
        assert.equal(await canI("carol", "list"), "yes");
        assert.equal(await canI("carol", "patch"), "no");
        assert.equal(await canI("carol", "create"), "no");
      } finally {
        await kubectl.run(["delete", "rolebinding", "bob-edit", "carol-view", "-n", WATCHED]);
        await deleteObjects(kubectl, roles);
        installed = [];
      }
    },
  );
});

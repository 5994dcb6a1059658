/**
 * The Helm chart on the full local cluster, in both install modes: `helm install` creates the controller's
 * Deployment (it rolls out on kwok's nodes, whose pods run nothing), and the controller, authenticated as the
 * chart's ServiceAccount (so with exactly the chart's rights), runs a CanaryApp in the watched namespace with
 * a labelled credentials Secret: children applied, phase Healthy, Events written, lease held. Then
 * `helm uninstall` removes everything the chart installed but the CRD. Last, the demo's story (v1 live, v2
 * promoted step by step, v3 caught and rolled back) runs with the controller under the chart's rights.
 */
import assert from "node:assert/strict";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { AppsV1Api, CoreV1Api, RbacAuthorizationV1Api } from "@kubernetes/client-node";
import { statusCodeOf } from "../src/kube/errors.js";
import { CHART, shell } from "../test/support/helm.js";
import { canaryApps, testKubeConfig, testKubeConfigPath } from "../test/support/kube.js";
import {
  installedControllerRunsAnApp,
  notTerminating,
  serviceAccountKubeconfig,
  SYSTEM_NAMESPACE,
} from "../test/support/installed-controller.js";
import { startEnvironment, type Environment } from "./demo/environment.js";
import { Kubectl, toolchainKubectl } from "./demo/kubectl.js";
import { StoryRecorder } from "./demo/recorder.js";
import { readSample, runStory } from "./demo/story.js";

const kc = testKubeConfig();
const kubectl = new Kubectl(toolchainKubectl(), testKubeConfigPath());
const core = kc.makeApiClient(CoreV1Api);
const apps = kc.makeApiClient(AppsV1Api);
const rbac = kc.makeApiClient(RbacAuthorizationV1Api);
const WATCHED = "team-a";
const env = { KUBECONFIG: testKubeConfigPath() };

const MODES = [
  { name: "cluster-wide", set: "", namespaces: "" },
  { name: "namespaced", set: `--set 'watchNamespaces={${WATCHED}}'`, namespaces: WATCHED },
];

describe("helm install charts/canaryapp", () => {
  let scratch: string;

  /** Namespaces that did not exist before this file (helm's --create-namespace makes canaryapp-system). */
  const created: string[] = [];
  before(async () => {
    scratch = await mkdtemp(join(tmpdir(), "canaryapp-helm-"));
    for (const name of [SYSTEM_NAMESPACE, WATCHED]) {
      await notTerminating(kc, name);
      const exists = await core.readNamespace({ name }).then(
        () => true,
        (err: unknown) => (statusCodeOf(err) === 404 ? false : Promise.reject(err as Error)),
      );
      if (!exists) created.push(name);
    }
  });
  after(async () => {
    await canaryApps(kc, WATCHED)
      .delete("helm")
      .catch(() => undefined);
    await shell(`helm uninstall canaryapp -n ${SYSTEM_NAMESPACE} --wait --ignore-not-found`, env).catch(
      () => undefined,
    );
    // Deleted and waited out, so that the next file finds no namespace Terminating.
    for (const name of created) {
      await core.deleteNamespace({ name }).catch(() => undefined);
      await notTerminating(kc, name);
    }
    await rm(scratch, { recursive: true, force: true });
  });

  for (const mode of MODES) {
    test(
      `${mode.name}: helm install, then the controller runs a CanaryApp with the chart's rights`,
      { timeout: 240_000 },
      async () => {
        await notTerminating(kc, SYSTEM_NAMESPACE);
        await notTerminating(kc, WATCHED);
        await core.createNamespace({ body: { metadata: { name: WATCHED } } }).catch((err: unknown) => {
          if (statusCodeOf(err) !== 409) throw err;
        });
        const installed = await shell(
          `helm install canaryapp ${CHART} --namespace ${SYSTEM_NAMESPACE} --create-namespace ${mode.set} --wait --timeout 2m`,
          env,
        );
        assert.match(installed, /STATUS: deployed/, installed);
        const status = await shell(`helm status canaryapp -n ${SYSTEM_NAMESPACE} -o json`, env);
        assert.equal((JSON.parse(status) as { info: { status: string } }).info.status, "deployed");

        const deployment = await apps.readNamespacedDeployment({
          namespace: SYSTEM_NAMESPACE,
          name: "canaryapp-controller",
        });
        assert.equal(deployment.status?.conditions?.find((c) => c.type === "Available")?.status, "True");
        const containerEnv = deployment.spec?.template.spec?.containers[0]?.env ?? [];
        assert.equal(containerEnv.find((e) => e.name === "WATCH_NAMESPACES")?.value, mode.namespaces || undefined);
        const clusterRole = await rbac.readClusterRole({ name: "canaryapp-controller" }).then(
          () => true,
          (err: unknown) => (statusCodeOf(err) === 404 ? false : Promise.reject(err as Error)),
        );
        assert.equal(
          clusterRole,
          mode.name === "cluster-wide",
          "only the cluster-wide mode grants cluster-wide rights",
        );

        // The controller, with the chart's ServiceAccount token and the mode's namespaces, as the Deployment runs it.
        await installedControllerRunsAnApp({
          kc,
          kubectl,
          scratch,
          label: `helm-${mode.name}`,
          watchNamespaces: mode.namespaces,
          namespace: WATCHED,
          app: "helm",
        });
        const uninstalled = await shell(`helm uninstall canaryapp -n ${SYSTEM_NAMESPACE} --wait`, env);
        assert.match(uninstalled, /release "canaryapp" uninstalled/);
        await assert.rejects(
          apps.readNamespacedDeployment({ namespace: SYSTEM_NAMESPACE, name: "canaryapp-controller" }),
          (err: unknown) => statusCodeOf(err) === 404,
        );
        // Helm keeps the CRDs of crds/ on uninstall, so the CanaryApps of other releases survive.
        await shell("kubectl get crd canaryapps.canaryapp.io", env);
      },
    );
  }

  test("the demo's story runs with the controller under the chart's ServiceAccount", { timeout: 300_000 }, async () => {
    await notTerminating(kc, SYSTEM_NAMESPACE);
    await shell(
      `helm install canaryapp ${CHART} --namespace ${SYSTEM_NAMESPACE} --create-namespace --wait --timeout 2m`,
      env,
    );
    const namespace = `helm-story-${Date.now().toString(36)}`;
    const controllerKubeconfig = join(scratch, "story.kubeconfig");
    await serviceAccountKubeconfig(kc, kubectl, controllerKubeconfig);
    let story: Environment | undefined;
    let recorder: StoryRecorder | undefined;
    try {
      story = await startEnvironment({ namespace, kubeconfig: testKubeConfigPath(), controllerKubeconfig, rps: 50 });
      const seed = await readSample();
      recorder = await StoryRecorder.start(kc, namespace, seed.metadata.name ?? "canaryapp-sample");
      const result = await runStory({
        kubectl: new Kubectl(toolchainKubectl(), testKubeConfigPath()),
        recorder,
        namespace,
        prometheusURL: story.prometheus.url,
        rps: 50,
      });
      const failed = result.checks.filter((c) => !c.ok).map((c) => `${c.name}: ${c.detail}`);
      assert.deepEqual(failed, [], "every check of the story passes");
      assert.equal(result.ok, true);
      assert.equal(result.app.status?.primaryImage, result.images.v2, "v2 was promoted");
      assert.equal(result.failure?.image, result.images.v3, "v3 was rolled back and recorded");
    } finally {
      await recorder?.stop().catch(() => undefined);
      await story?.stop();
      await core.deleteNamespace({ name: namespace }).catch(() => undefined);
      await shell(`helm uninstall canaryapp -n ${SYSTEM_NAMESPACE} --wait`, env);
    }
  });
});

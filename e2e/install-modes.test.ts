/**
 * Both install modes on the full local cluster: `kubectl kustomize config/<mode> | kubectl apply
 * --server-side -f -`, the controller Deployment rolls out, and the controller, authenticated as the
 * ServiceAccount the mode installs (so with exactly its rights), runs a CanaryApp in the watched namespace
 * with a labelled credentials Secret: children applied, primary Ready, Events written, lease held. Then the
 * user roles: config/user-roles aggregates into Kubernetes' edit and view, so a namespace's editors and
 * viewers use CanaryApps without another binding.
 */
import assert from "node:assert/strict";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { AppsV1Api, CoreV1Api } from "@kubernetes/client-node";
import { statusCodeOf } from "../src/kube/errors.js";
import { canaryApps, testKubeConfig, testKubeConfigPath } from "../test/support/kube.js";
import { deleteObjects, kustomize, type Manifest } from "../test/support/rbac.js";
import { findRepoRoot } from "./cluster/toolchain.js";
import { waitFor } from "./cluster/wait.js";
import {
  installedControllerRunsAnApp,
  notTerminating,
  SYSTEM_NAMESPACE,
} from "../test/support/installed-controller.js";
import { Kubectl, toolchainKubectl } from "./demo/kubectl.js";

const kc = testKubeConfig();
const core = kc.makeApiClient(CoreV1Api);
const apps = kc.makeApiClient(AppsV1Api);
const kubectl = new Kubectl(toolchainKubectl(), testKubeConfigPath());
const repoRoot = findRepoRoot();
/** The namespace config/namespaced watches. */
const WATCHED = "team-a";

async function ensureNamespace(name: string): Promise<void> {
  await notTerminating(kc, name);
  await core.createNamespace({ body: { metadata: { name } } }).catch((err: unknown) => {
    if (statusCodeOf(err) !== 409) throw err;
  });
}

const MODES = [
  // Cluster-wide: the controller watches every namespace.
  { name: "cluster-wide", dir: "config/default", namespaces: "" },
  { name: "namespaced", dir: "config/namespaced", namespaces: WATCHED },
];

describe("install modes", () => {
  let scratch: string;
  let installed: Manifest[] = [];

  before(async () => {
    scratch = await mkdtemp(join(tmpdir(), "canaryapp-modes-"));
  });
  after(async () => {
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
        await notTerminating(kc, SYSTEM_NAMESPACE);
        await ensureNamespace(WATCHED);
        const objects = await kustomize(kubectl, repoRoot, mode.dir);
        installed = objects;
        const applied = await kubectl.shell(
          `kubectl kustomize ${mode.dir} | kubectl apply --server-side -f -`,
          repoRoot,
        );
        for (const line of applied.trim().split("\n")) assert.match(line, / serverside-applied$/, applied);
        // The namespaced mode's one cluster-wide right: reading ClusterCanaryAnalysisTemplates (ADR 0031).
        assert.equal(
          objects.some(
            (o) =>
              (o.kind === "ClusterRole" || o.kind === "ClusterRoleBinding") &&
              o.metadata.name !== "canaryapp-controller-cluster-templates",
          ),
          mode.name === "cluster-wide",
          "only the cluster-wide mode grants cluster-wide rights beyond reading cluster templates",
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
        await installedControllerRunsAnApp({
          kc,
          kubectl,
          scratch,
          label: `e2e-${mode.name}`,
          watchNamespaces: mode.namespaces,
          namespace: WATCHED,
          app: "modes",
        });
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

/**
 * The controller's pod as both install modes render it (`kubectl kustomize config/<mode>`): non-root, a
 * read-only root filesystem, no privilege escalation, every capability dropped, seccomp RuntimeDefault,
 * requests and limits, nothing of the host. The API server accepts it (server-side dry run).
 */
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import type { V1Deployment } from "@kubernetes/client-node";
import { dumpYaml } from "@kubernetes/client-node";
import { findRepoRoot } from "../../e2e/cluster/toolchain.js";
import { Kubectl, toolchainKubectl } from "../../e2e/demo/kubectl.js";
import { testKubeConfigPath } from "../support/kube.js";
import { kustomize } from "../support/rbac.js";

const repoRoot = findRepoRoot();

for (const dir of ["config/default", "config/namespaced"]) {
  describe(`the manager's pod in ${dir}`, () => {
    const kubectl = new Kubectl(toolchainKubectl(), testKubeConfigPath());
    const manager = async (): Promise<V1Deployment> => {
      const objects = await kustomize(kubectl, repoRoot, dir);
      const deployments = objects.filter((o) => o.kind === "Deployment");
      assert.equal(deployments.length, 1);
      return deployments[0] as unknown as V1Deployment;
    };

    test("runs as a non-root user with seccomp RuntimeDefault, and shares nothing with the host", async () => {
      const pod = (await manager()).spec?.template.spec;
      assert.ok(pod);
      assert.equal(pod.securityContext?.runAsNonRoot, true);
      assert.ok((pod.securityContext?.runAsUser ?? 0) > 0, "a numeric non-zero user");
      assert.equal(pod.securityContext?.seccompProfile?.type, "RuntimeDefault");
      assert.notEqual(pod.hostNetwork, true);
      assert.notEqual(pod.hostPID, true);
      assert.notEqual(pod.hostIPC, true);
      assert.deepEqual(
        (pod.volumes ?? []).filter((v) => v.hostPath !== undefined),
        [],
      );
    });

    test("every container: read-only root, no privilege escalation, ALL capabilities dropped, limits set", async () => {
      const pod = (await manager()).spec?.template.spec;
      const containers = [...(pod?.initContainers ?? []), ...(pod?.containers ?? [])];
      assert.ok(containers.length > 0);
      for (const c of containers) {
        const sc = c.securityContext;
        assert.equal(sc?.readOnlyRootFilesystem, true, c.name);
        assert.equal(sc?.allowPrivilegeEscalation, false, c.name);
        assert.notEqual(sc?.privileged, true, c.name);
        assert.deepEqual(sc?.capabilities?.drop, ["ALL"], c.name);
        assert.equal(sc?.capabilities?.add, undefined, c.name);
        assert.notEqual(sc?.runAsUser, 0, c.name);
        for (const resource of ["cpu", "memory"]) {
          assert.ok(c.resources?.requests?.[resource] !== undefined, `${c.name}: requests.${resource}`);
          assert.ok(c.resources?.limits?.[resource] !== undefined, `${c.name}: limits.${resource}`);
        }
      }
    });

    test("the API server accepts it (server-side dry run)", async () => {
      const deployment = await manager();
      // The dry run needs its namespace; the Deployment alone is checked, in a namespace of its own.
      await kubectl.run(["create", "namespace", "canaryapp-system"]).catch(() => undefined);
      const out = await kubectl.run(["apply", "--server-side", "--dry-run=server", "-f", "-"], dumpYaml(deployment));
      assert.match(out, /serverside-applied \(server dry run\)/);
    });
  });
}

/**
 * The controller's rights, as the API server grants them, in both install modes: config/default
 * (ClusterRole) and config/namespaced (a Role per watched namespace). Each mode's RBAC objects are applied
 * to a real API server and `kubectl auth can-i --list --as=<the controller's ServiceAccount>` is asked in a
 * watched namespace, the controller's own and one it has no business in. The answers must equal
 * config/rbac/expected-rights.txt, so any change of rights is a visible diff in review.
 * UPDATE_EXPECTED_RIGHTS=1 rewrites the file (then read the diff before committing it).
 */
import assert from "node:assert/strict";
import { readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { findRepoRoot } from "../../e2e/cluster/toolchain.js";
import { Kubectl, toolchainKubectl } from "../../e2e/demo/kubectl.js";
import { eventually, testKubeConfigPath } from "../support/kube.js";
import { applyObjects, deleteObjects, grantedRights, kustomize, RBAC_KINDS, type Manifest } from "../support/rbac.js";

const repoRoot = findRepoRoot();
const EXPECTED = join(repoRoot, "config", "rbac", "expected-rights.txt");
const SERVICE_ACCOUNT = "system:serviceaccount:canaryapp-system:canaryapp-controller";
/** The namespace config/namespaced watches, the controller's own, and one it does not watch. */
const NAMESPACES = ["team-a", "canaryapp-system", "unwatched"];
const MODES = [
  { name: "cluster-wide", dir: "config/default" },
  { name: "namespaced", dir: "config/namespaced" },
];

const HEADER = `# The rights of the controller's ServiceAccount (${SERVICE_ACCOUNT}), as
# \`kubectl auth can-i --list -n NAMESPACE --as=${SERVICE_ACCOUNT}\` reports them after the install
# mode's RBAC objects are applied, without the rights every authenticated identity has.
# Checked by test/integration/rbac-matrix.test.ts. After a deliberate change, regenerate with
# UPDATE_EXPECTED_RIGHTS=1 and review the diff.
`;

describe("the controller's rights in both install modes", () => {
  let kubectl: Kubectl;
  const sections: string[] = [];
  let applied: Manifest[] = [];

  before(async () => {
    kubectl = new Kubectl(toolchainKubectl(), testKubeConfigPath());
    // The watched namespace must exist for its Role; Namespaces are never deleted here (the api profile
    // has no namespace controller to finish a deletion).
    await kubectl.run(["create", "namespace", "team-a"]).catch(() => undefined);
  });
  after(async () => {
    await deleteObjects(
      kubectl,
      applied.filter((o) => o.kind !== "Namespace"),
    );
  });

  for (const mode of MODES) {
    test(`${mode.name} (${mode.dir})`, async () => {
      const objects = (await kustomize(kubectl, repoRoot, mode.dir)).filter((o) => RBAC_KINDS.has(o.kind));
      await applyObjects(kubectl, objects);
      applied = objects;
      // The authorizer follows RBAC objects through a watch: wait until it has seen them.
      await eventually(
        `${mode.name} rights granted`,
        async () =>
          (await grantedRights(kubectl, SERVICE_ACCOUNT, "team-a")).some((r) => r.startsWith("canaryapps.")) ||
          undefined,
      );
      try {
        for (const namespace of NAMESPACES) {
          const rights = await grantedRights(kubectl, SERVICE_ACCOUNT, namespace);
          sections.push([`[${mode.name} (${mode.dir})] namespace ${namespace}`, ...rights].join("\n"));
        }
      } finally {
        await deleteObjects(
          kubectl,
          objects.filter((o) => o.kind !== "Namespace"),
        );
        applied = [];
      }
    });
  }

  test("equal config/rbac/expected-rights.txt", async () => {
    assert.equal(sections.length, MODES.length * NAMESPACES.length, "every mode was read");
    const actual = `${HEADER}\n${sections.join("\n\n")}\n`;
    if (process.env["UPDATE_EXPECTED_RIGHTS"] === "1") await writeFile(EXPECTED, actual);
    const expected = await readFile(EXPECTED, "utf8").catch(() => "(missing)");
    assert.equal(actual, expected, `the rights changed; if on purpose, run with UPDATE_EXPECTED_RIGHTS=1:\n${actual}`);
  });
});

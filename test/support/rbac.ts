import { join } from "node:path";
import { dumpYaml, loadAllYaml } from "@kubernetes/client-node";
import type { Kubectl } from "../../e2e/demo/kubectl.js";

/** A manifest as kustomize prints it. */
export interface Manifest {
  apiVersion: string;
  kind: string;
  metadata: { name: string; namespace?: string };
}

/** The objects `kubectl kustomize config/<dir>` makes. */
export async function kustomize(kubectl: Kubectl, repoRoot: string, dir: string): Promise<Manifest[]> {
  return loadAllYaml(await kubectl.run(["kustomize", join(repoRoot, dir)])) as Manifest[];
}

/** Server-side applies `objects` (as the cluster's admin). */
export async function applyObjects(kubectl: Kubectl, objects: Manifest[]): Promise<void> {
  if (objects.length === 0) return;
  await kubectl.run(["apply", "--server-side", "-f", "-"], objects.map((o) => dumpYaml(o)).join("---\n"));
}

/** Deletes `objects` and waits until they are gone. */
export async function deleteObjects(kubectl: Kubectl, objects: Manifest[]): Promise<void> {
  if (objects.length === 0) return;
  await kubectl.run(
    ["delete", "--ignore-not-found", "--wait", "-f", "-"],
    objects.map((o) => dumpYaml(o)).join("---\n"),
  );
}

/** The kinds that make up an identity and its rights. */
export const RBAC_KINDS = new Set([
  "Namespace",
  "ServiceAccount",
  "Role",
  "RoleBinding",
  "ClusterRole",
  "ClusterRoleBinding",
]);

/**
 * What `subject` may do in `namespace`, from `kubectl auth can-i --list --as`: one line a resource,
 * `resource [verbs]`, sorted. Rights that every authenticated identity has (discovery and health URLs, the
 * self-subject reviews) are left out, so the lines are exactly what the subject was granted.
 */
export async function grantedRights(kubectl: Kubectl, subject: string, namespace: string): Promise<string[]> {
  const out = await kubectl.run(["auth", "can-i", "--list", "--no-headers", "-n", namespace, "--as", subject]);
  return out
    .trim()
    .split("\n")
    .map((line) => line.trim().split(/\s{2,}/))
    .filter(([resource]) => resource !== undefined && resource !== "" && !resource.startsWith("["))
    .filter(
      ([resource]) =>
        !/^selfsubject\w+\.authorization\.k8s\.io$|^selfsubjectreviews\.authentication\.k8s\.io$/.test(resource ?? ""),
    )
    .map(([resource, , resourceNames, verbs]) =>
      resourceNames !== undefined && resourceNames !== "[]"
        ? `${resource} ${resourceNames} ${verbs ?? ""}`
        : `${resource} ${verbs ?? ""}`,
    )
    .sort();
}

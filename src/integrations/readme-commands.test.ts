/**
 * Every command the README's "kubectl plugin" and "Argo CD" sections tell a user to run is run by a test.
 * This keeps the two lists together: a command added to those sections without a test that runs it (or a
 * test that stops running it) fails here, with the test file named.
 */
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { test } from "node:test";
import { findRepoRoot } from "../../e2e/cluster/toolchain.js";

const ROOT = findRepoRoot();

/** Each command of those sections → the test file that runs it, and what that file must contain to do so. */
const RUN_BY: Record<string, { file: string; contains: string[] }> = {
  "kubectl canaryapp": { file: "test/integration/kubectl-plugin.test.ts", contains: ['"canaryapp", "--help"'] },
  "make install-plugin PREFIX=~/.local": {
    file: "test/integration/kubectl-plugin.test.ts",
    contains: ['"install-plugin", `PREFIX=${prefix}`'],
  },
  "kubectl canaryapp get NAME": {
    file: "test/integration/kubectl-plugin.test.ts",
    contains: ['plugin("get", "tree")'],
  },
  "kubectl canaryapp get NAME -w": {
    file: "test/integration/kubectl-plugin-rollout.test.ts",
    contains: ['"canaryapp", "get", name, "-w"'],
  },
  "kubectl canaryapp set image NAME repo/app:v2": {
    file: "test/integration/kubectl-plugin-rollout.test.ts",
    contains: ['plugin("set", "image", name, v2)'],
  },
  "kubectl canaryapp pause NAME": {
    file: "test/integration/kubectl-plugin.test.ts",
    contains: ['plugin("pause", "controls")'],
  },
  "kubectl canaryapp history NAME": {
    file: "test/integration/kubectl-plugin-rollout.test.ts",
    contains: ['plugin("history", name)'],
  },
  "kubectl canaryapp wait NAME --for=healthy --timeout=10m": {
    file: "test/integration/kubectl-plugin-rollout.test.ts",
    contains: ['plugin("wait", name, "--for=healthy", "--timeout=10m")'],
  },
  "kubectl get canaryapp -o wide": {
    file: "test/integration/kubectl-plugin.test.ts",
    contains: ['["get", "canaryapp", "cols", "-n", namespace, "-o", "wide"]'],
  },
  "kubectl -n argocd patch configmap argocd-cm --type merge --patch-file integrations/argocd/argocd-cm.yaml": {
    file: "test/integration/argocd-example.test.ts",
    contains: ['"patch",', '"--patch-file",', '"integrations/argocd/argocd-cm.yaml",'],
  },
  "kubectl diff --server-side -f examples/argocd-app/app -n shop": {
    file: "test/integration/argocd-example.test.ts",
    contains: ['["diff", "--server-side", "-f", dir, ...ns()]', 'const APP_DIR = "examples/argocd-app/app"'],
  },
  "kubectl apply -n argocd -f examples/argocd-app/project.yaml -f examples/argocd-app/application.yaml": {
    file: "test/integration/argocd-example.test.ts",
    contains: ['"examples/argocd-app/project.yaml",', '"examples/argocd-app/application.yaml",'],
  },
};

/** The text of the README's sections with these headings. */
function sections(readme: string, headings: string[]): string {
  const parts = readme.split(/^(?=## )/m);
  return parts.filter((p) => headings.some((h) => p.startsWith(`## ${h}\n`))).join("");
}

test("every command in the README's kubectl plugin and Argo CD sections is run by a test", () => {
  const text = sections(readFileSync(join(ROOT, "README.md"), "utf8"), ["kubectl plugin", "Argo CD"]);
  const commands = [...text.matchAll(/`((?:kubectl|make) [^`]*|kubectl)`/g)].map((m) => m[1] ?? "");
  assert.ok(commands.length >= 10, `found only ${commands.length} commands: are the sections still there?`);
  for (const command of new Set(commands)) {
    const runBy = RUN_BY[command];
    assert.ok(runBy !== undefined, `the README's \`${command}\` is run by no test listed here`);
    const source = readFileSync(join(ROOT, runBy.file), "utf8");
    for (const fragment of runBy.contains) {
      assert.ok(source.includes(fragment), `${runBy.file} no longer runs \`${command}\` (missing ${fragment})`);
    }
  }
});

/**
 * The helm built from its Go module by `make helm` (part of `make toolchain`), and the chart's rendering.
 */
import { execFile } from "node:child_process";
import { accessSync, constants, readFileSync } from "node:fs";
import { join } from "node:path";
import { loadAllYaml } from "@kubernetes/client-node";
import {
  cacheDir,
  findRepoRoot,
  parseEnvFile,
  PrerequisiteError,
  resolveToolchain,
} from "../../e2e/cluster/toolchain.js";
import type { Manifest } from "./rbac.js";

export const CHART = "charts/canaryapp";

/** The pinned helm binary; a PrerequisiteError names `make helm` when it is missing. */
export function helmBinary(repoRoot: string = findRepoRoot()): string {
  const versions = parseEnvFile(readFileSync(join(repoRoot, "e2e", "toolchain", "versions.env"), "utf8"));
  const version = versions["HELM_VERSION"];
  if (!version) throw new Error("e2e/toolchain/versions.env: HELM_VERSION is not set");
  const helm = join(cacheDir(), `helm-v${version}`, "helm");
  try {
    accessSync(helm, constants.X_OK);
  } catch {
    throw new PrerequisiteError(`${helm} is missing: run \`make helm\` to build it`);
  }
  return helm;
}

/** Runs a bash script (`set -euo pipefail`) in the repository root with helm and kubectl first on PATH. */
export function shell(script: string, env: NodeJS.ProcessEnv = {}): Promise<string> {
  const root = findRepoRoot();
  const dirs = [join(helmBinary(root), ".."), join(resolveToolchain(root).kubectl, "..")];
  return new Promise((resolve, reject) => {
    execFile(
      "bash",
      ["-c", `set -euo pipefail\n${script}`],
      {
        cwd: root,
        env: { ...process.env, ...env, PATH: [...dirs, process.env["PATH"] ?? ""].join(":") },
        encoding: "utf8",
        maxBuffer: 64 * 1024 * 1024,
        timeout: 180_000,
      },
      (error, stdout, stderr) => {
        if (error) reject(new Error(`${script}: ${error.message}\n${stderr}`));
        else resolve(stdout);
      },
    );
  });
}

/** The objects `helm template` renders from the chart with these `--set` values (CRDs included). */
export async function helmTemplate(set: string[] = [], namespace = "canaryapp-system"): Promise<Manifest[]> {
  const args = set.map((s) => `--set ${quote(s)}`).join(" ");
  const out = await shell(`helm template canaryapp ${CHART} --namespace ${namespace} --include-crds ${args}`);
  return (loadAllYaml(out) as (Manifest | null)[]).filter((o): o is Manifest => o !== null);
}

function quote(word: string): string {
  return `'${word.replaceAll("'", `'\\''`)}'`;
}

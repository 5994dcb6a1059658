/**
 * istioctl, built from its Go module by `make istioctl` (the pin is ISTIOCTL_VERSION in e2e/toolchain/versions.env):
 * Istio's own checks of the VirtualServices and DestinationRules the controller writes.
 *
 * - `istioctl validate -f FILE` runs Istio's schema and field validation (what istiod's validating webhook runs)
 *   on a file, without a cluster.
 * - `istioctl analyze -n NAMESPACE` runs Istio's analyzers on what the API server holds in a namespace. No istiod
 *   runs on the local cluster, and none is needed: the analyzers read the API server alone (the mesh config is
 *   Istio's default when istio-system has none), so no flag beyond the kubeconfig and the namespace is needed.
 *   With `-o json` istioctl exits 0 whatever it finds; the messages are judged here (assertAnalyzeClean).
 */
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { accessSync, constants, readFileSync } from "node:fs";
import { join } from "node:path";
import { cacheDir, findRepoRoot, parseEnvFile, PrerequisiteError } from "./cluster/toolchain.js";

/** The pinned istioctl binary; a PrerequisiteError names `make istioctl` when it is missing. */
export function istioctlPath(repoRoot: string = findRepoRoot()): string {
  const versions = parseEnvFile(readFileSync(join(repoRoot, "e2e", "toolchain", "versions.env"), "utf8"));
  const version = versions["ISTIOCTL_VERSION"];
  if (!version) throw new Error("e2e/toolchain/versions.env: ISTIOCTL_VERSION is not set");
  const istioctl = join(cacheDir(), `istioctl-v${version}`, "istioctl");
  try {
    accessSync(istioctl, constants.X_OK);
  } catch {
    throw new PrerequisiteError(`${istioctl} is missing: run \`make istioctl\` to build it`);
  }
  return istioctl;
}

export interface IstioctlRun {
  code: number;
  stdout: string;
  stderr: string;
}

/** Runs istioctl with `args`; a non-zero exit is returned, not thrown (failing is what some callers check). */
export function istioctl(args: string[], env: NodeJS.ProcessEnv = process.env): Promise<IstioctlRun> {
  const binary = istioctlPath();
  return new Promise((resolve, reject) => {
    execFile(
      binary,
      args,
      { env, encoding: "utf8", maxBuffer: 64 * 1024 * 1024, timeout: 120_000 },
      (error, stdout, stderr) => {
        if (error && typeof error.code !== "number") {
          reject(new Error(`istioctl ${args.join(" ")}: ${error.message}\n${stderr}`));
        } else resolve({ code: typeof error?.code === "number" ? error.code : 0, stdout, stderr });
      },
    );
  });
}

/**
 * `istioctl validate -f file`, offline: the KUBECONFIG of the test cluster is left out, so what it says depends on
 * the file alone. It prints `"<file>" is valid` (on stderr) and exits 0, or the errors and exits 1.
 */
export function istioValidate(file: string): Promise<IstioctlRun> {
  const env = { ...process.env };
  delete env["KUBECONFIG"];
  return istioctl(["validate", "-f", file], env);
}

export type AnalyzeLevel = "Error" | "Warning" | "Info";

/** One message of `istioctl analyze`. */
export interface AnalyzeMessage {
  /** Istio's message code, IST0xxx (istio.io/latest/docs/reference/config/analysis/). */
  code: string;
  level: AnalyzeLevel;
  message: string;
  /** The object it is about, as Istio names it ("VirtualService ns/name"); "" for mesh-wide messages. */
  resource: string;
}

export interface AnalyzeReport {
  namespace: string;
  errors: AnalyzeMessage[];
  warnings: AnalyzeMessage[];
  infos: AnalyzeMessage[];
}

/** The messages of `istioctl analyze -o json`: a JSON array of {code, level, message, origin, documentationUrl}. */
export function parseAnalyzeJson(text: string): AnalyzeMessage[] {
  const parsed: unknown = JSON.parse(text);
  if (!Array.isArray(parsed)) throw new Error(`istioctl analyze -o json printed no array: ${text}`);
  return parsed.map((entry: Record<string, unknown>) => {
    const level = entry["level"];
    if (level !== "Error" && level !== "Warning" && level !== "Info") {
      throw new Error(`istioctl analyze: a message of level ${String(level)}: ${JSON.stringify(entry)}`);
    }
    const text = (key: string) => (typeof entry[key] === "string" ? entry[key] : "");
    return { code: text("code"), level, message: text("message"), resource: text("origin") };
  });
}

/** `istioctl analyze` on one namespace of the cluster `kubeconfigPath` names, its messages by level. */
export async function istioAnalyze(kubeconfigPath: string, namespace: string): Promise<AnalyzeReport> {
  const args = ["analyze", "--kubeconfig", kubeconfigPath, "-n", namespace, "-o", "json"];
  const run = await istioctl(args);
  // A namespace it cannot find is said on stderr with exit 0 and nothing analyzed: that is no clean report.
  if (run.code !== 0 || run.stdout.trim() === "") {
    throw new Error(`istioctl ${args.join(" ")} exited ${run.code}: ${run.stderr}${run.stdout}`);
  }
  const messages = parseAnalyzeJson(run.stdout);
  const of = (level: AnalyzeLevel) => messages.filter((m) => m.level === level);
  return { namespace, errors: of("Error"), warnings: of("Warning"), infos: of("Info") };
}

function line(m: AnalyzeMessage): string {
  return `${m.level} ${m.code} ${m.resource || "(mesh)"}: ${m.message}`;
}

/**
 * The report as `# ` lines for the test log: every message, each expected warning followed by the reason it is
 * expected here.
 */
export function printAnalyzeReport(report: AnalyzeReport, explained: Record<string, string> = {}): void {
  const { errors, warnings, infos } = report;
  console.log(
    `# istioctl analyze -n ${report.namespace}: ${errors.length} errors, ${warnings.length} warnings, ${infos.length} infos`,
  );
  for (const m of [...errors, ...warnings, ...infos]) {
    console.log(`#   ${line(m)}`);
    const why = m.level === "Warning" ? explained[m.code] : undefined;
    if (why !== undefined) console.log(`#     expected here: ${why}`);
  }
}

/**
 * Fails on any Error, and on any Warning whose code `explained` does not give (code → the sentence saying why it
 * is expected on this cluster). Infos never fail.
 */
export function assertAnalyzeClean(report: AnalyzeReport, explained: Record<string, string>): void {
  const unexplained = report.warnings.filter((m) => explained[m.code] === undefined);
  assert.deepEqual(
    [...report.errors, ...unexplained].map(line),
    [],
    `istioctl analyze -n ${report.namespace}: errors, or warnings no one explained`,
  );
}

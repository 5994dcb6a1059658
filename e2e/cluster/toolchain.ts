import { accessSync, constants, existsSync, readFileSync } from "node:fs";
import { homedir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

/** A missing binary or tool: the message is one line that names the command which fixes it. */
export class PrerequisiteError extends Error {
  override name = "PrerequisiteError";
}

/** Absolute paths of everything the local control plane is started from. */
export interface Toolchain {
  repoRoot: string;
  kubeApiserver: string;
  kubeControllerManager: string;
  kubeScheduler: string;
  kubectl: string;
  etcd: string;
  kwok: string;
  istioCrds: string;
  /**
   * The Gateway API CRDs (`make gateway-api-crds`). Not checked here: only a cluster started with the Gateway API
   * needs the file ({@link requireGatewayApiCrds}), and `make demo` does not fetch it.
   */
  gatewayApiCrds: string;
  /** Folder of our own CRDs (`crds/`), every file of which is installed. */
  crdsDir: string;
}

/** The repository root: the nearest folder above this file that holds e2e/toolchain/versions.env. */
export function findRepoRoot(from: string = dirname(fileURLToPath(import.meta.url))): string {
  for (let dir = from; ; dir = dirname(dir)) {
    if (existsSync(join(dir, "e2e", "toolchain", "versions.env"))) return dir;
    if (dirname(dir) === dir) throw new Error(`repository root not found above ${from}`);
  }
}

/** Parses the KEY=VALUE lines of a shell env file (comments and blank lines ignored). */
export function parseEnvFile(text: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const line of text.split("\n")) {
    const m = /^\s*([A-Z0-9_]+)=(.*?)\s*$/.exec(line);
    if (m?.[1] !== undefined && m[2] !== undefined) out[m[1]] = m[2];
  }
  return out;
}

/** Where the toolchain build caches its outputs; the build script uses the same rule. */
export function cacheDir(): string {
  return process.env["CANARYAPP_CACHE"] ?? join(homedir(), ".cache", "canaryapp");
}

/**
 * Locates the binaries built by e2e/toolchain/build-control-plane.sh for the versions pinned in versions.env.
 * Throws a PrerequisiteError naming `make toolchain` when one is missing.
 */
export function resolveToolchain(repoRoot: string = findRepoRoot()): Toolchain {
  const versionsFile = join(repoRoot, "e2e", "toolchain", "versions.env");
  const v = parseEnvFile(readFileSync(versionsFile, "utf8"));
  const need = (key: string): string => {
    const value = v[key];
    if (!value) throw new Error(`${versionsFile}: ${key} is not set`);
    return value;
  };
  const cache = cacheDir();
  const kube = join(cache, `kubernetes-v${need("KUBERNETES_VERSION")}`);
  const tc: Toolchain = {
    repoRoot,
    kubeApiserver: join(kube, "kube-apiserver"),
    kubeControllerManager: join(kube, "kube-controller-manager"),
    kubeScheduler: join(kube, "kube-scheduler"),
    kubectl: join(kube, "kubectl"),
    etcd: join(cache, `etcd-v${need("ETCD_VERSION")}`, "etcd"),
    kwok: join(cache, `kwok-v${need("KWOK_VERSION")}`, "kwok"),
    istioCrds: join(cache, `istio-api-v${need("ISTIO_API_VERSION")}`, "crds.yaml"),
    gatewayApiCrds: join(cache, `gateway-api-v${need("GATEWAY_API_VERSION")}`, "crds.yaml"),
    crdsDir: join(repoRoot, "crds"),
  };
  for (const bin of [tc.kubeApiserver, tc.kubeControllerManager, tc.kubeScheduler, tc.etcd, tc.kwok]) {
    try {
      accessSync(bin, constants.X_OK);
    } catch {
      throw new PrerequisiteError(`${bin} is missing: run \`make toolchain\` to build the local control plane`);
    }
  }
  if (!existsSync(tc.istioCrds)) {
    throw new PrerequisiteError(`${tc.istioCrds} is missing: run \`make toolchain\` to fetch the Istio CRDs`);
  }
  return tc;
}

/** The Gateway API CRD file, for a cluster that installs them; a PrerequisiteError naming its make target if absent. */
export function requireGatewayApiCrds(tc: Toolchain): string {
  if (!existsSync(tc.gatewayApiCrds)) {
    throw new PrerequisiteError(
      `${tc.gatewayApiCrds} is missing: run \`make gateway-api-crds\` to fetch the Gateway API CRDs`,
    );
  }
  return tc.gatewayApiCrds;
}

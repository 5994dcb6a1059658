import { existsSync } from "node:fs";
import { homedir } from "node:os";
import { delimiter, join } from "node:path";
import {
  AppsV1Api,
  CoordinationV1Api,
  CoreV1Api,
  CustomObjectsApi,
  KubeConfig,
  KubernetesObjectApi,
} from "@kubernetes/client-node";
import type { Watcher } from "./list-watch.js";
import { PooledKubeConfig } from "./connections.js";
import { StreamWatch } from "./watch.js";

export { PooledKubeConfig } from "./connections.js";

const SERVICE_ACCOUNT_TOKEN = "/var/run/secrets/kubernetes.io/serviceaccount/token";

/** Where {@link loadKubeConfig} looks; injectable so tests need not touch the real environment. */
export interface KubeConfigSources {
  env?: Record<string, string | undefined>;
  home?: string;
  fileExists?: (path: string) => boolean;
}

/**
 * Loads a KubeConfig from, in order: `path` (a file, or several joined by the platform's path delimiter as
 * in $KUBECONFIG), $KUBECONFIG, the in-cluster service account, ~/.kube/config.
 *
 * Unlike client-node's `loadFromDefault`, it never falls back to an unauthenticated http://localhost:8080:
 * finding no configuration at all is an error that says where it looked. In-cluster comes before
 * ~/.kube/config so that a pod never picks up a stray file from its image.
 */
export function loadKubeConfig(path?: string, sources: KubeConfigSources = {}): PooledKubeConfig {
  const env = sources.env ?? process.env;
  const exists = sources.fileExists ?? existsSync;
  const kc = new PooledKubeConfig();
  const files = (path ?? env.KUBECONFIG ?? "").split(delimiter).filter((f) => f !== "");
  const [first, ...rest] = files;
  if (first !== undefined) {
    kc.loadFromFile(first);
    for (const file of rest) {
      const more = new KubeConfig();
      more.loadFromFile(file);
      // As kubectl: the first file that sets current-context wins.
      kc.mergeConfig(more, Boolean(kc.getCurrentContext()));
    }
  } else if (env.KUBERNETES_SERVICE_HOST !== undefined && exists(SERVICE_ACCOUNT_TOKEN)) {
    kc.loadFromCluster();
  } else {
    const home = join(sources.home ?? homedir(), ".kube", "config");
    if (!exists(home)) {
      throw new Error(`no kubeconfig: no --kubeconfig, $KUBECONFIG unset, not in a cluster, and ${home} is missing`);
    }
    kc.loadFromFile(home);
  }
  if (kc.getCurrentCluster() === null) {
    throw new Error(`kubeconfig: current context "${kc.getCurrentContext()}" names no cluster`);
  }
  return kc;
}

/**
 * client-node's API clients, all built from one KubeConfig and sharing its connections: what the processes
 * around the controller (kubectl plugin, demo, simulator, tests, benches) talk to the API server through. The
 * controller itself uses the lighter `KubeRest` (src/kube/rest.ts, ADR 0017).
 */
export interface KubeClients {
  kubeConfig: PooledKubeConfig;
  core: CoreV1Api;
  apps: AppsV1Api;
  coordination: CoordinationV1Api;
  customObjects: CustomObjectsApi;
  /** Generic client for any kind (server-side apply, delete, merge patches). */
  objects: KubernetesObjectApi;
  /** Streams watch events; informers use it. */
  watch: Watcher;
}

/** Builds the clients; any number of sets may share one config (and so its connections). */
export function createClients(kubeConfig: PooledKubeConfig): KubeClients {
  return {
    kubeConfig,
    core: kubeConfig.makeApiClient(CoreV1Api),
    apps: kubeConfig.makeApiClient(AppsV1Api),
    coordination: kubeConfig.makeApiClient(CoordinationV1Api),
    customObjects: kubeConfig.makeApiClient(CustomObjectsApi),
    objects: KubernetesObjectApi.makeApiClient(kubeConfig),
    watch: new StreamWatch(kubeConfig),
  };
}

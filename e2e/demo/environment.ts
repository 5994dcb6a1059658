/**
 * Everything the story runs on, on one machine without Docker: a control plane with kwok nodes (or the one
 * KUBECONFIG names), the mesh traffic simulator standing in for Istio's data plane, a real Prometheus
 * scraping it, and the controller as a child process pointed at that Prometheus.
 */
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { CoreV1Api } from "@kubernetes/client-node";
import { statusCodeOf } from "../../src/kube/errors.js";
import { loadKubeConfig, type PooledKubeConfig } from "../../src/kube/client.js";
import { startControlPlane, type ControlPlane } from "../cluster/index.js";
import { reservePort } from "../cluster/ports.js";
import { waitFor } from "../cluster/wait.js";
import { SCRAPE_JOB, startPrometheus, type RunningPrometheus } from "../prometheus.js";
import { startSimulator, type Simulator, type SimulatorOptions } from "../sim/simulator.js";
import { startControllerProcess, type ControllerProcess } from "./controller-process.js";
import { Kubectl, toolchainKubectl } from "./kubectl.js";

/** Requests per second from callers outside the mesh, in the demo and the tests that use this environment. */
export const OUTSIDE_MESH_RPS = 5;
/** How many simulator ticks (250 ms) the proxies' view lags the API server. */
export const PROPAGATION_TICKS = 4;

export interface EnvironmentOptions {
  /** The namespace the story runs in; created when missing. The controller and simulator watch only it. */
  namespace: string;
  /** A running cluster's kubeconfig; when absent, a local control plane (cluster profile) is started. */
  kubeconfig?: string;
  /** The kubeconfig the controller runs with (default: the admin one), e.g. a ServiceAccount's token. */
  controllerKubeconfig?: string;
  /** Simulated requests per second to the app (default: the simulator's 20). */
  rps?: number;
  /**
   * Aborted when the user interrupts (Ctrl-C): a start-up that fails then leaves no folders behind (a
   * control plane that fails on its own keeps its logs for inspection).
   */
  signal?: AbortSignal;
  /** Told as each part comes up, with how long it took. */
  progress?: (part: string, detail: string, ms: number) => void;
  /** More of the simulator's traffic: through Gateways, with headers and cookies (e2e/sim/simulator.ts). */
  traffic?: Pick<SimulatorOptions, "gatewayRps" | "gatewayNamespaces" | "requestHeaders" | "behaviours">;
  /** More controller flags, e.g. the gateways and hosts the operator allows. */
  controllerFlags?: string[];
}

export interface Environment {
  readonly namespace: string;
  readonly kubeconfigPath: string;
  readonly kc: PooledKubeConfig;
  readonly kubectl: Kubectl;
  /** Set when this environment started the control plane. */
  readonly controlPlane: ControlPlane | undefined;
  readonly simulator: Simulator;
  readonly prometheus: RunningPrometheus;
  readonly controller: ControllerProcess;
  /** Folder of the controller's log (and of the control plane while it runs); kept after stop. */
  readonly workDir: string;
  /** Stops the controller, the simulator, Prometheus and the control plane it started, in that order. Idempotent. */
  stop(): Promise<void>;
}

/**
 * Starts the parts in dependency order. On failure, whatever was started is stopped before the error is
 * rethrown. Nothing installs signal handlers: the caller owns Ctrl-C and calls `stop`.
 */
export async function startEnvironment(opts: EnvironmentOptions): Promise<Environment> {
  const progress = opts.progress ?? (() => undefined);
  const stoppers: (() => Promise<void>)[] = [];
  const stopAll = async (): Promise<void> => {
    // Newest first: the controller goes before what it talks to.
    for (const stop of stoppers.reverse().splice(0)) await stop().catch(() => undefined);
  };
  const timed = async <T>(part: string, start: () => Promise<T>, detail: (t: T) => string): Promise<T> => {
    const started = Date.now();
    const value = await start();
    progress(part, detail(value), Date.now() - started);
    return value;
  };

  const workDir = await mkdtemp(join(tmpdir(), "canaryapp-demo-"));
  const clusterDir = join(workDir, "cluster");
  // The simulator's port is known before anything starts, so Prometheus starts beside the control plane: its
  // first look at a new target comes a few seconds after its start, which then passes while the cluster starts.
  const simulatorPort = await reservePort();
  let prometheusStart: Promise<RunningPrometheus> | undefined;
  try {
    const kubectlBinary = toolchainKubectl();
    const prometheusStarted = Date.now();
    prometheusStart = startPrometheus({ targets: [`127.0.0.1:${simulatorPort.port}`], handleSignals: false });
    // Awaited once the simulator runs; until then a failure to start waits there, not unhandled.
    prometheusStart.catch(() => undefined);
    let controlPlane: ControlPlane | undefined;
    let kubeconfigPath = opts.kubeconfig;
    if (kubeconfigPath === undefined) {
      const cp = await timed(
        "control plane",
        () => startControlPlane({ profile: "cluster", workDir: clusterDir, handleSignals: false }),
        (c) => `etcd, kube-apiserver, controller-manager, scheduler, kwok (${c.nodes.length} fake nodes)`,
      );
      stoppers.push(() => cp.stop());
      controlPlane = cp;
      kubeconfigPath = cp.kubeconfigPath;
    }
    const kc = loadKubeConfig(kubeconfigPath);
    await ensureNamespace(kc, opts.namespace);

    await simulatorPort.release();
    const simulator = await timed(
      "traffic simulator",
      () =>
        startSimulator({
          kubeconfig: kc,
          namespaces: [opts.namespace],
          port: simulatorPort.port,
          ...(opts.rps !== undefined ? { rps: opts.rps } : {}),
          // Callers without a sidecar beside the mesh's, and proxies that learn of a change a second late
          // (4 ticks of 250 ms), so the story shows what each would suffer (e2e/sim, ADR 0010).
          outsideMeshRps: OUTSIDE_MESH_RPS,
          propagationTicks: PROPAGATION_TICKS,
          ...opts.traffic,
        }),
      (s) => `${s.state().rps} requests/s per app, Istio metrics at ${s.url}/metrics`,
    );
    stoppers.push(() => simulator.stop());

    const prometheus = await prometheusStart;
    stoppers.push(() => prometheus.stop());
    prometheusStart = undefined;
    await firstScrape(prometheus.url);
    progress("Prometheus", `${prometheus.url}, scraping the simulator every second`, Date.now() - prometheusStarted);

    const controller = await timed(
      "controller",
      () =>
        startControllerProcess({
          kubeconfig: opts.controllerKubeconfig ?? kubeconfigPath,
          namespace: opts.namespace,
          prometheusURL: prometheus.url,
          logPath: join(workDir, "controller.log"),
          ...(opts.controllerFlags !== undefined ? { flags: opts.controllerFlags } : {}),
        }),
      (c) => `pid ${c.pid}, watching namespace ${opts.namespace}, ${c.url}/metrics`,
    );
    stoppers.push(() => controller.stop());

    let stopped: Promise<void> | undefined;
    return {
      namespace: opts.namespace,
      kubeconfigPath,
      kc,
      kubectl: new Kubectl(kubectlBinary, kubeconfigPath),
      controlPlane,
      simulator,
      prometheus,
      controller,
      workDir,
      stop: () => (stopped ??= stopAll()),
    };
  } catch (err) {
    await simulatorPort.release();
    await stopAll();
    // A Prometheus that was still starting is stopped once it has started.
    await (await prometheusStart?.catch(() => undefined))?.stop();
    if (opts.signal?.aborted) await rm(workDir, { recursive: true, force: true });
    throw err;
  }
}

/**
 * Waits until Prometheus has scraped the simulator: its scrape manager applies new targets a few seconds
 * after start, and an analysis before that would find no data at all.
 */
async function firstScrape(url: string): Promise<void> {
  const query = encodeURIComponent(`up{job="${SCRAPE_JOB}"} == 1`);
  await waitFor(
    "Prometheus: first scrape of the simulator",
    async () => {
      const body = (await (await fetch(`${url}/api/v1/query?query=${query}`)).json()) as {
        data?: { result?: unknown[] };
      };
      return (body.data?.result?.length ?? 0) > 0 ? true : undefined;
    },
    { timeoutMs: 30_000, intervalMs: 200 },
  );
}

async function ensureNamespace(kc: PooledKubeConfig, name: string): Promise<void> {
  try {
    await kc.makeApiClient(CoreV1Api).createNamespace({ body: { metadata: { name } } });
  } catch (err) {
    if (statusCodeOf(err) !== 409) throw new Error(`Namespace ${name}: create failed`, { cause: err });
  }
}

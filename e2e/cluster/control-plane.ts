import { mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import { rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { ApiextensionsV1Api, type V1CustomResourceDefinition } from "@kubernetes/client-node";
import { loadKubeConfig, type PooledKubeConfig } from "../../src/kube/client.js";
import { pino, type Logger } from "pino";
import { AdminClient } from "./admin-client.js";
import { auditArgs, writeAuditPolicy } from "./audit.js";
import { track, untrack, type Stoppable } from "./cleanup.js";
import { installCrds, loadCrds } from "./crds.js";
import { createFakeNodes, POD_STAGES } from "./fake-nodes.js";
import { writeKubeconfig } from "./kubeconfig.js";
import { ManagedProcess } from "./managed-process.js";
import { createPki, type Pki } from "./pki.js";
import { freePorts } from "./ports.js";
import { requireGatewayApiCrds, resolveToolchain, type Toolchain } from "./toolchain.js";
import { waitFor } from "./wait.js";

/**
 * `api`: etcd + kube-apiserver with our CRDs and Istio's routing CRDs; nothing reconciles built-in objects.
 * `cluster`: adds kube-controller-manager, kube-scheduler and kwok with fake nodes, so Deployments roll out.
 */
export type Profile = "api" | "cluster";

/** Options of {@link startControlPlane}. */
export interface StartOptions {
  profile: Profile;
  /** Folder for certificates, etcd data, kubeconfig and logs; a new temporary folder when omitted. */
  workDir?: string;
  log?: Logger;
  /** Stop on SIGINT/SIGTERM and exit (default true). A caller that handles signals itself passes false. */
  handleSignals?: boolean;
  /** Folder whose YAML files hold the project's CRDs (default: the repository's `crds/`). */
  crdsDir?: string;
  /** Budget for each startup wait (default 60 s; a cold disk cache can make the first start slow). */
  timeoutMs?: number;
  /**
   * Also start a second kube-apiserver on the same etcd, never stopped by {@link ControlPlane.stopApiServer}:
   * a vantage point for watchers that must see every write while the first one is down.
   */
  observer?: boolean;
  /**
   * Audit the writes to the objects the controller writes (e2e/cluster/audit.ts): kube-apiserver logs each as
   * one JSON line to {@link ControlPlane.auditLogPath}, with the writer's User-Agent. The observer is not audited.
   */
  audit?: boolean;
  /**
   * Also install the Gateway API CRDs (HTTPRoute, Gateway, GatewayClass, ReferenceGrant; `make gateway-api-crds`)
   * after ours and Istio's. Off by default: their schemas are large, and most tests do not route through them.
   */
  gatewayApi?: boolean;
}

/** Options of {@link ControlPlane.stop}. */
export interface StopOptions {
  /** Leave the work folder (logs, kubeconfig) in place for inspection. */
  keepWorkDir?: boolean;
}

/** A running local control plane. */
export interface ControlPlane {
  readonly profile: Profile;
  /** Admin kubeconfig (client certificate in group system:masters). */
  readonly kubeconfigPath: string;
  /** The API server's URL, `https://127.0.0.1:<port>`. */
  readonly server: string;
  readonly workDir: string;
  /** Names of the kwok nodes (empty for the api profile). */
  readonly nodes: readonly string[];
  /** Milliseconds from the call to startControlPlane until it was ready. */
  readonly startupMs: number;
  /** Admin kubeconfig of the observer API server (StartOptions.observer), else undefined. */
  readonly observerKubeconfigPath: string | undefined;
  /** The audit log of kube-apiserver (StartOptions.audit; kept across its restarts), else undefined. */
  readonly auditLogPath: string | undefined;
  /**
   * Stops kube-apiserver (SIGTERM, SIGKILL after a grace period); etcd and every other component keep running.
   * Requests to {@link server} are refused until {@link startApiServer}.
   */
  stopApiServer(): Promise<void>;
  /** Starts kube-apiserver again on the same port, etcd and certificates; resolves once /readyz is OK. */
  startApiServer(): Promise<void>;
  /** Stops every process it started (SIGTERM, SIGKILL after a grace period) and removes the work folder. */
  stop(opts?: StopOptions): Promise<void>;
}

const SERVICE_CIDR = "10.96.0.0/16";
const SERVICE_IP = "10.96.0.1";
const FAKE_NODE_COUNT = 2;
const STOP_GRACE_MS = 5_000;

/**
 * Starts a local control plane from the binaries built by `make toolchain`, on free loopback ports, and resolves
 * once it is usable: /readyz is OK, every CRD is Established and namespace `default` exists; for the cluster
 * profile also the fake nodes are Ready and the `default` ServiceAccount exists. On failure everything started is
 * stopped, the work folder is kept, and the error names the failing component's log with its tail.
 */
export async function startControlPlane(opts: StartOptions): Promise<ControlPlane> {
  const started = Date.now();
  const toolchain = resolveToolchain();
  if (opts.crdsDir !== undefined) toolchain.crdsDir = opts.crdsDir;
  // Checked before anything starts, so that a missing file is one line naming its make target.
  const gatewayApiCrds = opts.gatewayApi ? requireGatewayApiCrds(toolchain) : undefined;
  const workDir = opts.workDir ?? (await mkdtemp(join(tmpdir(), `canaryapp-${opts.profile}-`)));
  await mkdir(workDir, { recursive: true });
  // A reused folder must not hand old etcd data to a new cluster.
  await rm(join(workDir, "etcd"), { recursive: true, force: true });
  const cp = new LocalControlPlane(opts.profile, workDir, toolchain, opts.log ?? pino({ level: "silent" }));
  track(cp, opts.handleSignals ?? true);
  try {
    await cp.boot(opts.timeoutMs ?? 60_000, opts.observer ?? false, opts.audit ?? false, gatewayApiCrds);
  } catch (err) {
    await cp.stop({ keepWorkDir: true });
    throw err;
  }
  cp.startupMs = Date.now() - started;
  cp.log.info(
    { profile: cp.profile, startupMs: cp.startupMs, phases: cp.phases, kubeconfig: cp.kubeconfigPath },
    "control plane ready",
  );
  return cp;
}

class LocalControlPlane implements ControlPlane, Stoppable {
  readonly kubeconfigPath: string;
  server = "";
  nodes: string[] = [];
  startupMs = 0;
  observerKubeconfigPath: string | undefined;
  auditLogPath: string | undefined;
  private readonly procs: ManagedProcess[] = [];
  /** How to start kube-apiserver again (set once booted). */
  private apiserverStart: { args: string[]; client: AdminClient } | undefined;
  private timeoutMs = 60_000;
  private observerClient: AdminClient | undefined;
  private readonly bootStarted = Date.now();
  /** Milliseconds from the start of boot at which each startup step finished, for the "ready" log line. */
  readonly phases: Record<string, number> = {};
  private stopped: Promise<void> | undefined;

  constructor(
    readonly profile: Profile,
    readonly workDir: string,
    private readonly tc: Toolchain,
    readonly log: Logger,
  ) {
    this.kubeconfigPath = join(workDir, "kubeconfig");
  }

  async boot(timeoutMs: number, observer = false, audit = false, gatewayApiCrds?: string): Promise<void> {
    this.timeoutMs = timeoutMs;
    const [etcdClientPort, etcdPeerPort, apiPort, observerPort] = (await freePorts(4)) as [
      number,
      number,
      number,
      number,
    ];
    const etcdUrl = `http://127.0.0.1:${etcdClientPort}`;
    this.server = `https://127.0.0.1:${apiPort}`;
    // etcd starts while openssl makes the certificates; the API server needs both.
    const etcd = this.spawn("etcd", this.tc.etcd, etcdArgs(join(this.workDir, "etcd"), etcdUrl, etcdPeerPort));
    const pki = await createPki(join(this.workDir, "pki"), SERVICE_IP);
    await writeKubeconfig(this.kubeconfigPath, {
      server: this.server,
      caCertFile: pki.caCert,
      clientCertFile: pki.adminCert,
      clientKeyFile: pki.adminKey,
      name: `canaryapp-${this.profile}`,
      user: "canaryapp-admin",
    });
    await waitFor("etcd: healthy", async () => ((await fetch(`${etcdUrl}/health`)).ok ? true : undefined), {
      timeoutMs,
      abort: () => this.deadProcess(),
    }).catch((err: unknown) => this.explain(err, etcd));
    this.mark("etcdHealthy");

    const args = apiserverArgs(apiPort, etcdUrl, pki);
    if (audit) {
      const files = await writeAuditPolicy(this.workDir);
      args.push(...auditArgs(files));
      this.auditLogPath = files.log;
    }
    const apiserver = this.spawn("kube-apiserver", this.tc.kubeApiserver, args);
    const client = new AdminClient(this.server, pki);
    this.apiserverStart = { args, client };
    // Parsing Istio's large CRD file (half a second), and the Gateway API's when asked, overlaps with the API
    // server's startup.
    const crdsLoaded = loadCrds(this.tc.crdsDir, this.tc.istioCrds, gatewayApiCrds);
    crdsLoaded.catch(() => undefined); // awaited below; this only keeps an early failure from being "unhandled"
    await waitFor(
      "kube-apiserver: /readyz",
      async () => ((await client.send("GET", "/readyz", undefined, 2_000)).status === 200 ? true : undefined),
      { timeoutMs, abort: () => this.deadProcess() },
    ).catch((err: unknown) => this.explain(err, apiserver));
    this.mark("apiserverReady");
    if (observer) await this.startObserver(observerPort, etcdUrl, pki, timeoutMs);

    if (this.profile === "cluster") await this.startClusterComponents(pki);
    const wait = { timeoutMs, abort: () => this.deadProcess() };
    const crds = await crdsLoaded;
    await Promise.all([
      installCrds(adminKubeConfig(this.kubeconfigPath).makeApiClient(ApiextensionsV1Api), crds, timeoutMs)
        .then(() => this.mark("crdsEstablished"))
        .then(() => this.untilObserverServes(crds, timeoutMs)),
      ensureDefaultNamespace(client, timeoutMs),
      this.profile === "cluster"
        ? createFakeNodes(client, FAKE_NODE_COUNT, wait).then((names) => {
            this.nodes = names;
            this.mark("nodesReady");
          })
        : undefined,
    ]).catch((err: unknown) => this.explain(err));

    if (this.profile === "cluster") {
      // The ServiceAccount admission plugin rejects pods until kube-controller-manager has made this account.
      await waitFor(
        "kube-controller-manager: ServiceAccount default/default",
        async () =>
          (await client.send("GET", "/api/v1/namespaces/default/serviceaccounts/default")).status === 200
            ? true
            : undefined,
        wait,
      ).catch((err: unknown) =>
        this.explain(
          err,
          this.procs.find((p) => p.name === "kube-controller-manager"),
        ),
      );
      this.mark("serviceAccountReady");
    }
  }

  private async startObserver(port: number, etcdUrl: string, pki: Pki, timeoutMs: number): Promise<void> {
    const server = `https://127.0.0.1:${port}`;
    const proc = this.spawn("kube-apiserver-observer", this.tc.kubeApiserver, apiserverArgs(port, etcdUrl, pki));
    const client = new AdminClient(server, pki);
    this.observerClient = client;
    await waitFor(
      "kube-apiserver (observer): /readyz",
      async () => ((await client.send("GET", "/readyz", undefined, 2_000)).status === 200 ? true : undefined),
      { timeoutMs, abort: () => this.deadProcess() },
    ).catch((err: unknown) => this.explain(err, proc));
    this.observerKubeconfigPath = join(this.workDir, "kubeconfig-observer");
    await writeKubeconfig(this.observerKubeconfigPath, {
      server,
      caCertFile: pki.caCert,
      clientCertFile: pki.adminCert,
      clientKeyFile: pki.adminKey,
      name: `canaryapp-${this.profile}-observer`,
      user: "canaryapp-admin",
    });
    this.mark("observerReady");
  }

  /** The observer serves every CRD's objects (it learns of CRDs installed through the first server a bit later). */
  private async untilObserverServes(crds: V1CustomResourceDefinition[], timeoutMs: number): Promise<void> {
    const client = this.observerClient;
    if (client === undefined) return;
    await Promise.all(
      crds.map((crd) => {
        const version = crd.spec.versions.find((v) => v.served)?.name ?? "";
        const path = `/apis/${crd.spec.group}/${version}/${crd.spec.names.plural}?limit=1`;
        return waitFor(
          `kube-apiserver (observer): ${path}`,
          async () => ((await client.send("GET", path, undefined, 2_000)).status === 200 ? true : undefined),
          { timeoutMs, abort: () => this.deadProcess() },
        );
      }),
    );
    this.mark("observerServesCrds");
  }

  async stopApiServer(): Promise<void> {
    const running = this.procs.filter((p) => p.name === "kube-apiserver" && p.exitStatus === undefined);
    await Promise.all(running.map((p) => p.stop(STOP_GRACE_MS)));
    this.log.info({ stopped: running.length }, "kube-apiserver stopped");
  }

  async startApiServer(): Promise<void> {
    const start = this.apiserverStart;
    if (start === undefined) throw new Error("control plane: kube-apiserver was never started");
    if (this.procs.some((p) => p.name === "kube-apiserver" && p.exitStatus === undefined)) {
      throw new Error("control plane: kube-apiserver is already running");
    }
    const proc = this.spawn("kube-apiserver", this.tc.kubeApiserver, start.args);
    await waitFor(
      "kube-apiserver (restarted): /readyz",
      async () => ((await start.client.send("GET", "/readyz", undefined, 2_000)).status === 200 ? true : undefined),
      { timeoutMs: this.timeoutMs, abort: () => (proc.exitStatus !== undefined ? proc.describeExit() : undefined) },
    );
    this.log.info({ pid: proc.pid }, "kube-apiserver started again");
  }

  private async startClusterComponents(pki: Pki): Promise<void> {
    const kubeconfig = `--kubeconfig=${this.kubeconfigPath}`;
    this.spawn("kube-controller-manager", this.tc.kubeControllerManager, [
      kubeconfig,
      "--leader-elect=false",
      // No HTTPS endpoint: nothing scrapes it, and fixed default ports would stop two runs from coexisting.
      "--secure-port=0",
      `--root-ca-file=${pki.caCert}`,
      `--service-account-private-key-file=${pki.serviceAccountKey}`,
      `--cluster-signing-cert-file=${pki.caCert}`,
      `--cluster-signing-key-file=${pki.caKey}`,
      `--service-cluster-ip-range=${SERVICE_CIDR}`,
      "--use-service-account-credentials=false",
      // kwok's nodes report a heartbeat only every 20–45 s and hold no Lease, so after the default 50 s grace
      // the node lifecycle controller would mark them NotReady and every pod on them not Ready, for good.
      // Fake nodes never fail; the check only breaks tests that run longer than a minute.
      "--node-monitor-grace-period=1h",
      "--kube-api-qps=200",
      "--kube-api-burst=400",
    ]);
    this.spawn("kube-scheduler", this.tc.kubeScheduler, [
      kubeconfig,
      "--leader-elect=false",
      "--secure-port=0",
      "--kube-api-qps=200",
      "--kube-api-burst=400",
    ]);
    const kwokConfig = join(this.workDir, "kwok.yaml");
    // An explicit configuration keeps kwok from reading ~/.kwok. With no Node stage, v0.7 uses its built-in
    // node stages (nodes Ready); the pod stages are its defaults plus image IDs (POD_STAGES).
    await writeFile(
      kwokConfig,
      `apiVersion: config.kwok.x-k8s.io/v1alpha1\nkind: KwokConfiguration\noptions: {}\n---\n${POD_STAGES}`,
    );
    this.spawn("kwok", this.tc.kwok, [kubeconfig, `--config=${kwokConfig}`, "--manage-all-nodes=true"]);
  }

  private mark(phase: string): void {
    this.phases[phase] = Date.now() - this.bootStarted;
  }

  /** A process that was stopped on purpose and started again (an earlier kube-apiserver). */
  private replaced(p: ManagedProcess): boolean {
    return this.procs.some((q) => q !== p && q.name === p.name && this.procs.indexOf(q) > this.procs.indexOf(p));
  }

  private spawn(name: string, binary: string, args: string[]): ManagedProcess {
    // A signal may stop us mid-startup; nothing may be started after that.
    if (this.stopped) throw new Error(`control plane (${this.profile}): stopped during startup`);
    const p = new ManagedProcess(name, binary, args, join(this.workDir, `${name}.log`));
    this.procs.push(p);
    this.log.debug({ component: name, pid: p.pid, args }, "started");
    return p;
  }

  /** A reason to stop waiting: a component that exited during startup. */
  private deadProcess(): string | undefined {
    const dead = this.procs.find((p) => p.exitStatus !== undefined && !this.replaced(p));
    return dead ? dead.describeExit() : undefined;
  }

  /** Rethrows a startup error with the log of the component most likely at fault. */
  private explain(err: unknown, suspect?: ManagedProcess): never {
    const culprit = this.procs.find((p) => p.exitStatus !== undefined) ?? suspect;
    const message = err instanceof Error ? err.message : String(err);
    // An abort reason already carries the culprit's story; do not tell it twice.
    const detail = culprit ? culprit.describeExit() : `logs: ${this.workDir}`;
    const text = culprit && message.includes(culprit.logPath) ? message : `${message}\n${detail}`;
    throw new Error(`control plane (${this.profile}) failed to start: ${text}`, { cause: err });
  }

  stop(opts: StopOptions = {}): Promise<void> {
    this.stopped ??= this.shutdown(opts);
    return this.stopped;
  }

  private async shutdown(opts: StopOptions): Promise<void> {
    // Clients first, then the API server, then etcd: each stops while what it talks to is still there.
    const servers = ["kube-apiserver", "kube-apiserver-observer", "etcd"];
    await Promise.all(this.procs.filter((p) => !servers.includes(p.name)).map((p) => p.stop(STOP_GRACE_MS)));
    for (const name of servers) {
      await Promise.all(this.procs.filter((p) => p.name === name).map((p) => p.stop(STOP_GRACE_MS)));
    }
    untrack(this);
    if (!opts.keepWorkDir) await rm(this.workDir, { recursive: true, force: true });
    this.log.info(
      { profile: this.profile, workDir: opts.keepWorkDir ? this.workDir : undefined },
      "control plane stopped",
    );
  }

  stopNow(): void {
    for (const p of this.procs) p.killNow();
    rmSync(this.workDir, { recursive: true, force: true });
  }
}

function etcdArgs(dataDir: string, clientUrl: string, peerPort: number): string[] {
  const peerUrl = `http://127.0.0.1:${peerPort}`;
  return [
    "--name=default",
    `--data-dir=${dataDir}`,
    `--listen-client-urls=${clientUrl}`,
    `--advertise-client-urls=${clientUrl}`,
    `--listen-peer-urls=${peerUrl}`,
    `--initial-advertise-peer-urls=${peerUrl}`,
    `--initial-cluster=default=${peerUrl}`,
    // Test data is thrown away: durability buys nothing and fsync dominates write latency.
    "--unsafe-no-fsync",
    "--log-level=warn",
  ];
}

function apiserverArgs(port: number, etcdUrl: string, pki: Pki): string[] {
  return [
    // Mandatory on a machine without a default route: the server cannot guess an address to advertise.
    "--advertise-address=127.0.0.1",
    "--bind-address=127.0.0.1",
    `--secure-port=${port}`,
    `--etcd-servers=${etcdUrl}`,
    `--tls-cert-file=${pki.servingCert}`,
    `--tls-private-key-file=${pki.servingKey}`,
    `--client-ca-file=${pki.caCert}`,
    "--service-account-issuer=https://kubernetes.default.svc.cluster.local",
    `--service-account-key-file=${pki.serviceAccountPub}`,
    `--service-account-signing-key-file=${pki.serviceAccountKey}`,
    `--service-cluster-ip-range=${SERVICE_CIDR}`,
    "--authorization-mode=Node,RBAC",
    "--allow-privileged=true",
    "--profiling=false",
  ];
}

function adminKubeConfig(path: string): PooledKubeConfig {
  return loadKubeConfig(path);
}

async function ensureDefaultNamespace(client: AdminClient, timeoutMs: number): Promise<void> {
  // The API server creates it shortly after it is ready; create it ourselves if it has not yet (409 = it won).
  const res = await client.send("GET", "/api/v1/namespaces/default");
  if (res.status === 200) return;
  await client.expect(
    "POST",
    "/api/v1/namespaces",
    { apiVersion: "v1", kind: "Namespace", metadata: { name: "default" } },
    [409],
  );
  await waitFor(
    "Namespace default",
    async () => ((await client.send("GET", "/api/v1/namespaces/default")).status === 200 ? true : undefined),
    { timeoutMs },
  );
}

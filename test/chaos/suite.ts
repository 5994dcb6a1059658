/**
 * The chaos suite: N CanaryApps roll out wave after wave (some images pass their checks, some fail) while the
 * controller is SIGKILLed and restarted (at once or after a delay), a leader fails over to its standby,
 * kube-apiserver is stopped and started, and Prometheus goes down or hangs; or, in the upgrade run, while
 * rolling updates take two replicas from one share count to the next (ADR 0024). A recorder follows the world
 * through a second API server that is never stopped, and the invariant checker replays it in etcd order;
 * kube-apiserver's audit log tells which replica wrote what, and when (test/support/write-audit.ts).
 */
import { AppsV1Api, CoordinationV1Api, CoreV1Api, CustomObjectsApi } from "@kubernetes/client-node";
import { startControlPlane, type ControlPlane } from "../../e2e/cluster/index.js";
import { startPrometheus, type RunningPrometheus } from "../../e2e/prometheus.js";
import type { CanaryAppSpec } from "../../src/api/types.js";
import { loadKubeConfig } from "../../src/kube/client.js";
import { autoRollout, type AutoRollout } from "../support/auto-rollout.js";
import { startTestExporter, TEST_METRICS, type TestExporter } from "../support/exporter.js";
import { canaryApps } from "../support/kube.js";
import { spawnController, type ControllerProcess } from "../support/process.js";
import { ERRORS_CHECK, TRAFFIC_QUERY, untilScraping } from "../support/rollout-env.js";
import { startFaultyProxy, type FaultyProxy } from "./faulty-proxy.js";
import { checkWorld, INVARIANTS, plannedSteps, type AppScript, type CheckResult } from "./invariants.js";
import { WorldRecorder } from "./world.js";
import { shareLabelValue, shareOf } from "../../src/controller/shards.js";
import { LABELS } from "../../src/api/types.js";
import { ISTIO_NETWORKING } from "../../src/router/istio.js";
import { longestGap, overlappingAppTenures, overlappingShareTenures, type Replica } from "../support/app-tenures.js";
import { auditLog, formatAudit, type WriteAudit } from "../support/write-audit.js";
import { shareHolders as holdersOf } from "../support/share-holders.js";
import { DEFAULT_LEASE_NAME } from "../../src/config.js";

export type Fault = "kill" | "apiserver" | "prometheusDown" | "prometheusHang";

export interface ChaosOptions {
  /** Time during which new waves start and faults are made (ms). */
  durationMs: number;
  apps: number;
  /** Every third app (rounded up) fails its checks on odd waves. */
  failingApps?: number;
  /** The analysis interval (s). */
  intervalSeconds: number;
  /** Delay between a controller's SIGKILL and its restart (ms). */
  restartDelayMs: number;
  /**
   * Controller processes (2: leader election, and a kill of the leader is a failover; 3 with `shards`: all
   * active, and a kill moves the victim's shares to the others).
   */
  replicas: 1 | 2 | 3;
  /** Shares of the apps over the replicas (`--shards`, ADR 0016); unset: leader election. */
  shards?: number;
  /**
   * The upgrade run (ADR 0024): two replicas start with the first share count (1: unsharded, leader election),
   * then rolling updates take them to each next count while the waves go on, instead of the faults: for each
   * replica in turn, one of the new count is started, and once it is Ready and has run beside the old ones for
   * a pause (`faultGapMs`), the old one is sent SIGTERM. The waves go on for `durationMs` and until the last
   * rolling update has converged.
   */
  shareCounts?: number[];
  /** The faults to make, in turn. */
  faults: readonly Fault[];
  /** Pause between two faults (ms, drawn between the two). */
  faultGapMs: [number, number];
  /** How long kube-apiserver stays down (ms). */
  apiserverOutageMs: number;
  /** At most this many API-server restarts (default unbounded). */
  maxApiserverRestarts?: number;
  /** How long Prometheus stays down or hanging (ms). */
  prometheusFaultMs: number;
  log?: (line: string) => void;
}

export interface ChaosReport {
  options: ChaosOptions;
  kills: number;
  failovers: number;
  apiserverRestarts: number;
  prometheusDown: number;
  prometheusHangs: number;
  waves: number;
  apps: number;
  tests: number;
  seconds: number;
  changes: number;
  rewatches: number;
  /** Each fault, in ms since the apps were first Healthy. */
  timeline: string[];
  /** Sharded: ms from each kill until the others held every share of the killed replica. */
  takeoversMs: number[];
  /** Sharded: the apps in the shares each replica held just before the first kill, by identity. */
  appsPerReplica: Record<string, number>;
  /** Sharded: the CanaryApps in each replica's cache, and all its cached objects, just before the first kill. */
  cachedPerReplica: Record<string, { apps: number; objects: number }>;
  /**
   * Sharded: times two replicas held the same share at once, by their own logs ("took a share" to "gave up a
   * share" or their death). The fence lets a replica write for an app only while it holds the app's share, so
   * none means no app was written by two replicas at once.
   */
  shareOverlaps: string[];
  /**
   * Sharded, at the end (after the kills, restarts and the moves they caused): for each replica and child kind
   * whose cache does not hold exactly the children of the apps in the shares the replica holds, what it held
   * and what it should have; empty when all match (within 60 s of the end).
   */
  cacheMismatches: string[];
  /** Sharded: children without their app's share label in metadata, or with one in their pod template. */
  shareLabelErrors: string[];
  /** Every controller replica's writes, from kube-apiserver's audit log; its overlaps are writtenByTwo. */
  audit: WriteAudit;
  /** The upgrade run's rolling updates. */
  upgrade?: UpgradeReport;
  check: CheckResult;
}

/** One rolling update of the upgrade run. */
export interface RollReport {
  from: number;
  to: number;
  /** When the last replica of `from` was sent SIGTERM (ms since the apps were first Healthy). */
  lastStopMs: number;
  /**
   * From that SIGTERM until every share of `to` was held by a replica of `to` and every child of every app
   * carried its share label of `to` (ms).
   */
  convergedMs: number;
}

export interface UpgradeReport {
  counts: number[];
  rolls: RollReport[];
  /** Controller processes started in all. */
  processes: number;
  /**
   * From the first SIGTERM of the upgrade until the end: the longest time an app was in no replica's window
   * (fence open, or leading), by the replicas' logs (test/support/app-tenures.ts).
   */
  longestWithoutActorMs: number;
  /** Apps in two replicas' windows at once, by the replicas' logs. */
  logOverlaps: string[];
}

const STEP_WEIGHT = 10;
const MAX_WEIGHT = 50;
const WAVE_TIMEOUT_MS = 240_000;

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));
const between = ([low, high]: [number, number]) => low + Math.floor(Math.random() * (high - low + 1));

function imageOf(app: string, tag: string): string {
  return `registry.example.com/chaos/${app}:${tag}`;
}

/** Runs one chaos run on its own control plane and returns its report (it asserts nothing itself). */
export async function runChaos(options: ChaosOptions): Promise<ChaosReport> {
  const log = options.log ?? (() => undefined);
  const started = Date.now();
  const cp = await startControlPlane({ profile: "api", observer: true, audit: true, handleSignals: false });
  const cleanups: (() => unknown)[] = [() => cp.stop()];
  try {
    return await run(cp, options, log, cleanups, started);
  } finally {
    for (const cleanup of cleanups.reverse()) await Promise.resolve(cleanup()).catch(() => undefined);
  }
}

async function run(
  cp: ControlPlane,
  options: ChaosOptions,
  log: (line: string) => void,
  cleanups: (() => unknown)[],
  started: number,
): Promise<ChaosReport> {
  if (cp.observerKubeconfigPath === undefined) throw new Error("chaos: the control plane has no observer");
  const kc = loadKubeConfig(cp.observerKubeconfigPath);
  const namespace = "chaos";
  await kc.makeApiClient(CoreV1Api).createNamespace({ body: { metadata: { name: namespace } } });
  const recorder = await WorldRecorder.start(kc, namespace);
  cleanups.push(() => recorder.stop());

  const exporter: TestExporter = await startTestExporter();
  cleanups.push(() => exporter.stop());
  const prometheus: RunningPrometheus = await startPrometheus({
    targets: [exporter.target],
    scrapeIntervalSeconds: 1,
    handleSignals: false,
  });
  cleanups.push(() => prometheus.stop());
  await untilScraping(prometheus);
  const proxy: FaultyProxy = await startFaultyProxy(new URL(prometheus.url).host);
  cleanups.push(() => proxy.stop());
  const deployments: AutoRollout = autoRollout(kc, namespace);
  cleanups.push(() => deployments.stop());

  // The controllers.
  const controllers = new Map<string, ControllerProcess>();
  let generation = 0;
  /** The share count replicas are started with (the upgrade run moves it; 1 or unset: unsharded). */
  let shares = options.shareCounts?.[0] ?? options.shards;
  const flagsFor = (count: number | undefined) => [
    `--kubeconfig=${cp.kubeconfigPath}`,
    `--namespaces=${namespace}`,
    ...(options.replicas === 1 ? ["--leader-elect=false"] : [`--lease-namespace=${namespace}`]),
    ...(count !== undefined ? [`--shards=${count}`] : []),
  ];
  /** Every process started, with its share count, and when it was killed or had exited. */
  const everyProcess: {
    process: ControllerProcess;
    shares: number | undefined;
    killedAt?: number;
    exitedAt?: number;
  }[] = [];
  const startReplica = (slot: string): void => {
    generation++;
    // The upgrade's replicas are named after their count: s32-a-3 is the third process, replica a, 32 shares.
    const identity =
      options.shareCounts !== undefined ? `s${shares ?? 1}-${slot.slice(-1)}-${generation}` : `${slot}-${generation}`;
    const process = spawnController(flagsFor(shares), identity);
    controllers.set(slot, process);
    const entry: (typeof everyProcess)[number] = { process, shares };
    everyProcess.push(entry);
    void process.exited.then(() => (entry.exitedAt = Date.now()));
  };
  const slots =
    options.replicas === 1
      ? ["controller"]
      : options.replicas === 2
        ? ["replica-a", "replica-b"]
        : ["replica-a", "replica-b", "replica-c"];
  for (const slot of slots) startReplica(slot);
  cleanups.push(() => Promise.all([...controllers.values()].map((c) => c.kill("SIGKILL"))));
  const coordination = kc.makeApiClient(CoordinationV1Api);
  const shareHolders = (count = options.shards ?? 0) => holdersOf(coordination, namespace, count);
  const takeoversMs: number[] = [];
  const appsPerReplica: Record<string, number> = {};
  const cachedPerReplica: Record<string, { apps: number; objects: number }> = {};
  const holder = async (): Promise<string | undefined> =>
    (await coordination.readNamespacedLease({ namespace, name: DEFAULT_LEASE_NAME }).catch(() => undefined))?.spec
      ?.holderIdentity ?? undefined;

  // The apps.
  const failingCount = options.failingApps ?? Math.ceil(options.apps / 3);
  const scripts: AppScript[] = [];
  const appsApi = canaryApps(kc, namespace);
  for (let i = 0; i < options.apps; i++) {
    const name = `app-${String(i).padStart(2, "0")}`;
    scripts.push({ name, initialImage: imageOf(name, "w0"), waves: [] });
    exporter.set(TEST_METRICS.errors, name, 0);
    exporter.set(TEST_METRICS.requests, name, 1000);
    const spec: CanaryAppSpec = {
      image: imageOf(name, "w0"),
      imageListenPort: 8080,
      replicas: 1,
      testReplicas: 1,
      prometheusURL: proxy.url,
      prometheus: { timeoutSeconds: 2 },
      drainSeconds: 1,
      analysis: {
        interval: `${options.intervalSeconds}s`,
        stepWeight: STEP_WEIGHT,
        maxWeight: MAX_WEIGHT,
        threshold: 1,
        metrics: [ERRORS_CHECK],
        trafficQuery: TRAFFIC_QUERY,
        // A Prometheus that is down or hangs delays a test; it fails no image.
        failWhenPrometheusFails: false,
      },
    };
    await appsApi.create({ metadata: { name }, spec });
  }
  const failing = (index: number, wave: number) => index >= options.apps - failingCount && wave % 2 === 1;

  const settled = async (wave: number): Promise<boolean> => {
    const list = await Promise.all(scripts.map((s) => appsApi.get(s.name).catch(() => undefined)));
    return list.every((app, i) => {
      const script = scripts[i];
      if (app === undefined || script === undefined) return false;
      const want = [...script.waves].reverse().find((w) => w.passes)?.image ?? script.initialImage;
      const status = app.status;
      return (
        (status?.observedGeneration ?? 0) >= (app.metadata.generation ?? 1) &&
        status?.canary === undefined &&
        status?.primaryImage === want &&
        (wave === 0 || script.waves.at(-1)?.image === app.spec.image)
      );
    });
  };
  const untilSettled = async (wave: number, timeoutMs: number): Promise<boolean> => {
    const deadline = Date.now() + timeoutMs;
    while (Date.now() < deadline) {
      if (await settled(wave).catch(() => false)) return true;
      await sleep(500);
    }
    return false;
  };
  if (!(await untilSettled(0, 120_000))) throw new Error("chaos: the apps did not reach their first image");
  log(`# chaos: ${options.apps} apps Healthy on their first image after ${Date.now() - started} ms`);
  const origin = Date.now();
  const timeline: string[] = [];
  const mark = (what: string) => {
    timeline.push(`${Date.now() - origin} ${what}`);
    log(`# chaos: ${Date.now() - origin} ms: ${what}`);
  };

  // The faults, until the waves are over.
  const counts = { kills: 0, failovers: 0, apiserverRestarts: 0, prometheusDown: 0, prometheusHangs: 0 };
  let wavesOver = false;
  const faultLoop = (async () => {
    let turn = 0;
    while (!wavesOver) {
      await sleep(between(options.faultGapMs));
      if (wavesOver || options.faults.length === 0) break;
      let fault = options.faults[turn++ % options.faults.length] as Fault;
      if (fault === "apiserver" && counts.apiserverRestarts >= (options.maxApiserverRestarts ?? Infinity)) {
        fault = "kill";
      }
      switch (fault) {
        case "kill": {
          if (options.shards !== undefined) {
            if (counts.kills === 0) {
              for (const c of controllers.values()) {
                appsPerReplica[c.identity] = await c.metric("canaryapp_shard_apps");
                cachedPerReplica[c.identity] = {
                  apps: await c.metric('canaryapp_cached_objects{cache="canaryapps"}'),
                  objects: await c.metric("canaryapp_cached_objects"),
                };
              }
            }
            const slot = slots[counts.kills % slots.length] ?? "replica-a";
            const victim = controllers.get(slot);
            const before = await shareHolders().catch(() => []);
            const theirs = before.flatMap((h, share) => (h === victim?.identity ? [share] : []));
            await victim?.kill("SIGKILL");
            const killedAt = Date.now();
            const entry = everyProcess.find((e) => e.process === victim);
            if (entry) entry.killedAt = killedAt;
            counts.kills++;
            mark(`killed ${victim?.identity}, holding shares ${theirs.join(",")}`);
            const live = new Set([...controllers.values()].filter((c) => c !== victim).map((c) => c.identity));
            while (Date.now() - killedAt < 60_000) {
              const holders = await shareHolders().catch(() => []);
              if (theirs.every((share) => live.has(holders[share] ?? ""))) {
                takeoversMs.push(Date.now() - killedAt);
                counts.failovers++;
                mark(`shares ${theirs.join(",")} taken over after ${Date.now() - killedAt} ms`);
                break;
              }
              await sleep(250);
            }
            await sleep(options.restartDelayMs);
            startReplica(slot);
            mark(`started ${controllers.get(slot)?.identity}`);
            break;
          }
          const leader = options.replicas === 1 ? `controller-${generation}` : await holder();
          const slot = [...controllers].find(([, c]) => c.identity === leader)?.[0] ?? slots[0] ?? "controller";
          const victim = controllers.get(slot);
          await victim?.kill("SIGKILL");
          counts.kills++;
          mark(`killed ${victim?.identity}; restart in ${options.restartDelayMs} ms`);
          if (options.replicas === 2) {
            // The standby takes over once the lease expires.
            const before = victim?.identity;
            const tookOver = Date.now();
            while (!wavesOver && Date.now() - tookOver < 40_000) {
              const now = await holder();
              if (now !== undefined && now !== before) {
                counts.failovers++;
                mark(`${now} took over after ${Date.now() - tookOver} ms`);
                break;
              }
              if (Date.now() - tookOver >= options.restartDelayMs && controllers.get(slot) === victim)
                startReplica(slot);
              await sleep(250);
            }
          }
          if (controllers.get(slot) === victim) {
            await sleep(options.restartDelayMs);
            startReplica(slot);
            mark(`started ${controllers.get(slot)?.identity}`);
          }
          break;
        }
        case "apiserver": {
          await cp.stopApiServer();
          mark(`kube-apiserver stopped for ${options.apiserverOutageMs} ms`);
          await sleep(options.apiserverOutageMs);
          await cp.startApiServer();
          mark("kube-apiserver ready again");
          counts.apiserverRestarts++;
          break;
        }
        case "prometheusDown":
        case "prometheusHang": {
          proxy.setMode(fault === "prometheusDown" ? "down" : "hang");
          mark(`Prometheus ${fault === "prometheusDown" ? "down" : "hanging"} for ${options.prometheusFaultMs} ms`);
          if (fault === "prometheusDown") counts.prometheusDown++;
          else counts.prometheusHangs++;
          await sleep(options.prometheusFaultMs);
          proxy.setMode("up");
          mark("Prometheus back");
          break;
        }
      }
    }
  })();

  // The upgrade run's rolling updates, while the waves go on.
  const keys = scripts.map((script) => `${namespace}/${script.name}`);
  const rolls: RollReport[] = [];
  let firstStop: number | undefined;
  let upgradeOver = options.shareCounts === undefined;
  /** Every share of `count` held by a live replica, and every child labelled with its app's share of `count`. */
  const convergedTo = async (count: number): Promise<boolean> => {
    const live = new Set([...controllers.values()].map((c) => c.identity));
    if (!(await shareHolders(count)).every((h) => h !== undefined && live.has(h))) return false;
    if (count === 1) return true;
    const children = Object.values(await listChildren(kc, namespace)).flat();
    return children.every((child) => {
      const key = `${namespace}/${child.metadata?.labels?.[LABELS.app] ?? ""}`;
      return child.metadata?.labels?.[LABELS.share] === shareLabelValue(shareOf(key, count), count);
    });
  };
  /** A rolling update of every replica to `to` shares (see ChaosOptions.shareCounts). */
  const roll = async (to: number): Promise<RollReport> => {
    const from = shares ?? 1;
    mark(`rolling update from ${from} to ${to} shares`);
    shares = to;
    let lastStop = Date.now();
    const exits: Promise<unknown>[] = [];
    for (const slot of slots) {
      const old = controllers.get(slot);
      startReplica(slot);
      const fresh = controllers.get(slot);
      if (fresh === undefined) continue;
      await untilReady(fresh);
      mark(`${fresh.identity} Ready`);
      await sleep(between(options.faultGapMs));
      if (old === undefined) continue;
      // As a Deployment's rolling update does: SIGTERM, SIGKILL after the grace period (30 s), and the next new
      // replica started without waiting for the old one to be gone.
      old.child.kill("SIGTERM");
      const grace = setTimeout(() => void old.kill("SIGKILL"), 30_000);
      exits.push(old.exited.finally(() => clearTimeout(grace)));
      lastStop = Date.now();
      firstStop ??= lastStop;
      mark(`SIGTERM to ${old.identity}`);
    }
    await Promise.all(exits);
    while (!(await convergedTo(to).catch(() => false))) {
      if (Date.now() - lastStop > 120_000) throw new Error(`chaos: not converged to ${to} shares in 120 s`);
      await sleep(250);
    }
    const convergedMs = Date.now() - lastStop;
    mark(`converged to ${to} shares ${convergedMs} ms after the last SIGTERM`);
    return { from, to, lastStopMs: lastStop - origin, convergedMs };
  };
  const upgradeLoop = (async () => {
    try {
      for (const to of options.shareCounts?.slice(1) ?? []) {
        await sleep(between(options.faultGapMs));
        rolls.push(await roll(to));
      }
    } finally {
      upgradeOver = true;
    }
  })();
  // Awaited once the waves are over; until then a failure must not count as unhandled.
  upgradeLoop.catch(() => undefined);

  // The waves.
  let waves = 0;
  try {
    while (Date.now() - origin < options.durationMs || !upgradeOver) {
      waves++;
      const tag = `w${waves}`;
      await Promise.all(
        scripts.map(async (script, index) => {
          const passes = !failing(index, waves);
          exporter.set(TEST_METRICS.errors, script.name, passes ? 0 : 3);
          script.waves.push({ image: imageOf(script.name, tag), passes });
          await appsApi.patchSpec(script.name, { image: imageOf(script.name, tag) });
        }),
      );
      const waveStarted = Date.now();
      mark(`wave ${waves} started`);
      const ok = await untilSettled(waves, WAVE_TIMEOUT_MS);
      mark(`wave ${waves} ${ok ? "settled" : "did NOT settle"} in ${Date.now() - waveStarted} ms`);
      if (!ok) break;
    }
  } finally {
    wavesOver = true;
    await faultLoop;
    await upgradeLoop;
  }
  proxy.setMode("up");
  for (const slot of slots) {
    const c = controllers.get(slot);
    if (c === undefined || c.child.exitCode !== null || c.child.signalCode !== null) startReplica(slot);
  }
  await untilSettled(waves, WAVE_TIMEOUT_MS);
  // Events are written after the status: give the last ones a moment to arrive.
  await sleep(3_000);
  recorder.stop();

  const finalShares = shares;
  const { cacheMismatches, shareLabelErrors } =
    finalShares !== undefined && finalShares > 1
      ? await shardCaches(kc, namespace, finalShares, [...controllers.values()], () => shareHolders(finalShares))
      : { cacheMismatches: [], shareLabelErrors: [] };
  const history = recorder.history();
  const end = Date.now();
  const shareOverlaps = options.shards !== undefined ? overlappingShareTenures(everyProcess, end) : [];
  if (cp.auditLogPath === undefined) throw new Error("chaos: the control plane keeps no audit log");
  const audit = await auditLog(cp.auditLogPath, namespace, { apps: keys, origin });
  let upgrade: UpgradeReport | undefined;
  if (options.shareCounts !== undefined) {
    const replicas: Replica[] = everyProcess.map((e) => ({
      process: e.process,
      shares: e.shares !== undefined && e.shares > 1 ? e.shares : undefined,
      exitedAt: e.killedAt ?? e.exitedAt,
    }));
    upgrade = {
      counts: options.shareCounts,
      rolls,
      processes: everyProcess.length,
      longestWithoutActorMs: Math.max(0, ...keys.map((key) => longestGap(replicas, key, firstStop ?? origin, end))),
      logOverlaps: overlappingAppTenures(replicas, keys, end),
    };
  }
  const check = checkWorld(
    history,
    scripts,
    plannedSteps(STEP_WEIGHT, MAX_WEIGHT),
    recorder.gaps,
    origin,
    audit.overlaps,
  );
  return {
    options,
    ...counts,
    waves,
    apps: options.apps,
    tests: scripts.reduce((n, s) => n + s.waves.length, 0),
    seconds: Math.round((Date.now() - started) / 1000),
    changes: history.length,
    rewatches: recorder.rewatches,
    timeline,
    takeoversMs,
    appsPerReplica,
    cachedPerReplica,
    shareOverlaps,
    cacheMismatches,
    shareLabelErrors,
    audit,
    ...(upgrade !== undefined && { upgrade }),
    check,
  };
}

/** Resolves once the controller's /readyz answers 200 (a rolling update waits for it), or rejects. */
async function untilReady(controller: ControllerProcess, timeoutMs = 120_000): Promise<void> {
  const port = await controller.port();
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    const ready = await fetch(`http://127.0.0.1:${port}/readyz`).then(
      async (res) => {
        await res.body?.cancel();
        return res.ok;
      },
      () => false,
    );
    if (ready) return;
    if (controller.child.exitCode !== null || controller.child.signalCode !== null) {
      throw new Error(`chaos: ${controller.identity} exited before it was Ready`);
    }
    await sleep(250);
  }
  throw new Error(`chaos: ${controller.identity} not Ready in ${timeoutMs} ms`);
}

interface Child {
  metadata?: { name?: string; labels?: Record<string, string> };
  spec?: { template?: { metadata?: { labels?: Record<string, string> } } };
}

/** The children of the namespace's apps (managed by the controller), by kind. */
async function listChildren(
  kc: ReturnType<typeof loadKubeConfig>,
  namespace: string,
): Promise<Record<string, Child[]>> {
  const labelSelector = `${LABELS.managedBy}=canaryapp`;
  const custom = kc.makeApiClient(CustomObjectsApi);
  const istio = async (plural: string): Promise<Child[]> =>
    (
      (await custom.listNamespacedCustomObject({ ...ISTIO_NETWORKING, namespace, plural, labelSelector })) as {
        items: Child[];
      }
    ).items;
  return {
    deployment: (await kc.makeApiClient(AppsV1Api).listNamespacedDeployment({ namespace, labelSelector })).items,
    // A Service has no pod template.
    service: (await kc.makeApiClient(CoreV1Api).listNamespacedService({ namespace, labelSelector })).items.map((s) => ({
      metadata: s.metadata,
    })),
    destinationrule: await istio("destinationrules"),
    virtualservice: await istio("virtualservices"),
  };
}

/**
 * Sharded: whether each replica's child caches hold exactly the children of the apps in its shares (its
 * `canaryapp_cached_objects{cache=<kind>}` against the cluster's children, counted by their app's share), asked
 * until they match or 60 s have passed; and whether every child carries its app's share label in its metadata
 * and none in a pod template.
 */
async function shardCaches(
  kc: ReturnType<typeof loadKubeConfig>,
  namespace: string,
  shares: number,
  replicas: readonly ControllerProcess[],
  shareHolders: () => Promise<(string | undefined)[]>,
): Promise<{ cacheMismatches: string[]; shareLabelErrors: string[] }> {
  const children = () => listChildren(kc, namespace);
  const shareOfChild = (child: Child): number =>
    shareOf(`${namespace}/${child.metadata?.labels?.[LABELS.app] ?? ""}`, shares);
  let cacheMismatches: string[];
  let shareLabelErrors: string[];
  const deadline = Date.now() + 60_000;
  do {
    const byKind = await children();
    const holders = await shareHolders();
    shareLabelErrors = Object.entries(byKind).flatMap(([kind, list]) =>
      list.flatMap((child) => {
        const want = shareLabelValue(shareOfChild(child), shares);
        const errors: string[] = [];
        if (child.metadata?.labels?.[LABELS.share] !== want)
          errors.push(
            `${kind} ${child.metadata?.name ?? ""}: share label ${child.metadata?.labels?.[LABELS.share]}, want ${want}`,
          );
        if (child.spec?.template?.metadata?.labels?.[LABELS.share] !== undefined)
          errors.push(`${kind} ${child.metadata?.name ?? ""}: share label in the pod template`);
        return errors;
      }),
    );
    cacheMismatches = [];
    for (const replica of replicas) {
      for (const [kind, list] of Object.entries(byKind)) {
        const want = list.filter((child) => holders[shareOfChild(child)] === replica.identity).length;
        const held = await replica.metric(`canaryapp_cached_objects{cache="${kind}"}`).catch(() => -1);
        if (held !== want) cacheMismatches.push(`${replica.identity} ${kind}: caches ${held}, its shares have ${want}`);
      }
    }
    if (cacheMismatches.length === 0) break;
    await sleep(2_000);
  } while (Date.now() < deadline);
  return { cacheMismatches, shareLabelErrors };
}

/** The report as text: the faults made, the work done, and the count for every invariant. */
export function formatReport(report: ChaosReport): string {
  const o = report.options;
  const durations = Object.values(report.check.stepDurations).flat();
  const intervalMs = o.intervalSeconds * 1000;
  const short = durations.filter((d) => d < intervalMs).length;
  const lines = [
    `chaos run: ${report.apps} apps, ${o.replicas} controller replica(s), interval ${o.intervalSeconds}s, restart delay ${o.restartDelayMs} ms, ${o.shareCounts !== undefined ? `rolling updates through ${o.shareCounts.join(" → ")} shares` : `faults ${o.faults.join(",")}`}, ${report.seconds} s`,
    `  kills ${report.kills}, failovers ${report.failovers}, API-server restarts ${report.apiserverRestarts}, Prometheus down ${report.prometheusDown}, Prometheus hanging ${report.prometheusHangs}`,
    `  waves ${report.waves}, tests ${report.tests}, changes recorded ${report.changes}, rewatches ${report.rewatches}`,
    ...INVARIANTS.map((name) => {
      const examples = report.check.examples[name];
      const skips = name === "routeSequenceEqualsPlan" ? ` (${report.check.skippedStepsOnly} only skipped steps)` : "";
      return `  ${name}: ${report.check.counts[name]}${skips}${examples.length > 0 ? `  e.g. ${examples.join(" | ")}` : ""}`;
    }),
    `  timeline (ms since the apps were first Healthy): ${report.timeline.join("; ")}`,
    ...(o.shards !== undefined
      ? [
          `  sharded: ${o.shards} shares; apps per replica before the first kill ${JSON.stringify(report.appsPerReplica)}, cached (apps/objects) ${JSON.stringify(report.cachedPerReplica)}; takeovers ${report.takeoversMs.join(", ")} ms; share held by two at once: ${report.shareOverlaps.length}`,
        ]
      : []),
    `  steps on the route (by arrival time): ${durations.length}, shortest ${durations.length > 0 ? Math.min(...durations) : "-"} ms, ${short} shorter than the ${intervalMs} ms interval`,
    `  write audit (kube-apiserver): ${formatAudit(report.audit)}`,
    ...(report.upgrade !== undefined ? [formatUpgrade(report, report.upgrade)] : []),
  ];
  return lines.join("\n");
}

/** The upgrade run's rolling updates as text. */
function formatUpgrade(report: ChaosReport, upgrade: UpgradeReport): string {
  const rolls = upgrade.rolls.map(
    (r) => `${r.from} → ${r.to} shares converged ${r.convergedMs} ms after the last old replica's SIGTERM`,
  );
  return (
    `  rolling updates (${upgrade.processes} processes, ${report.options.replicas} at a time): ${rolls.join("; ")}; ` +
    `longest time an app was in no replica's window ${upgrade.longestWithoutActorMs} ms; ` +
    `apps in two replicas' windows by their logs ${upgrade.logOverlaps.length}; ` +
    `at the end, children without their share label ${report.shareLabelErrors.length}, ` +
    `replicas caching other than their shares' children ${report.cacheMismatches.length}` +
    [...upgrade.logOverlaps, ...report.shareLabelErrors, ...report.cacheMismatches]
      .slice(0, 3)
      .map((e, i) => `${i === 0 ? "  e.g. " : " | "}${e}`)
      .join("")
  );
}

/** Violations over every invariant. */
export function totalViolations(report: ChaosReport): number {
  return Object.values(report.check.counts).reduce((a, b) => a + b, 0);
}

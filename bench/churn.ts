/**
 * Shards under churn (ADR 0016): 3 controller replicas with 32 shares and N apps (default 5,000), R of which
 * (default 200) roll out a new image while one replica is SIGKILLed and then one more is added. Every 5th new
 * image fails its check (the test exporter's errors series, judged through a real Prometheus), the others pass.
 * Reports how long the apps went uncovered after each event, whether any app was written by two replicas at
 * once (kube-apiserver's audit log) or any share held by two (the replicas' logs), and whether every rollout
 * ended as its image calls for. The rolling apps live in a namespace of their own, where a stand-in for the
 * Deployment controller marks their Deployments available; the idle ones stay Initializing in another.
 *
 * `make bench` runs it with BENCH_ONLY=churn or BENCH_CHURN=1; alone: `node dist/bench/churn.js [apps] [rolling]`.
 */
import { AppsV1Api, CoordinationV1Api, CoreV1Api, CustomObjectsApi, type V1Deployment } from "@kubernetes/client-node";
import { pathToFileURL } from "node:url";
import { startControlPlane, type ControlPlane } from "../e2e/cluster/index.js";
import { startPrometheus } from "../e2e/prometheus.js";
import { childNames } from "../src/api/meta.js";
import { GROUP, PLURAL, VERSION, type CanaryApp } from "../src/api/types.js";
import { shareOf } from "../src/controller/shards.js";
import { DEFAULT_LEASE_NAME } from "../src/config.js";
import { loadKubeConfig, type PooledKubeConfig } from "../src/kube/client.js";
import { ISTIO_NETWORKING } from "../src/router/istio.js";
import type { AppScript } from "../test/chaos/invariants.js";
import { overlappingShareTenures } from "../test/support/app-tenures.js";
import { autoRollout } from "../test/support/auto-rollout.js";
import { startTestExporter, TEST_METRICS } from "../test/support/exporter.js";
import { canaryApps } from "../test/support/kube.js";
import { spawnController, type ControllerProcess } from "../test/support/process.js";
import { appSpec, image, INTERVAL_SECONDS, untilScraping } from "../test/support/rollout-env.js";
import { auditLog } from "../test/support/write-audit.js";
import { shareHolders as holdersOf } from "../test/support/share-holders.js";
import { createApps, IN_FLIGHT, sleep, untilAllRouted, untilReady } from "./apps.js";
import {
  atRest,
  auditFigures,
  coverageOf,
  endingProblems,
  reachedFirstStep,
  rolloutFigures,
  uncoveredMs,
  type ChurnEvent,
  type ChurnResult,
  type CoverageSample,
  type ReplicaFigures,
  type RolloutEnding,
} from "./churn-report.js";

export type { ChurnResult } from "./churn-report.js";

export interface ChurnOptions {
  /** CanaryApps in all (default 5,000). */
  apps: number;
  /** Of them, how many roll out (default 200). */
  rolling: number;
}

const SHARES = 32;
const GROUP_NAME = DEFAULT_LEASE_NAME;
/** Every this-many-th rolling app's new image fails its check. */
const FAIL_EVERY = 5;
const IDLE = "churn-idle";
const ROLLING = "churn-rolling";
const LEASES = "churn-leases";
/** Until the rolling apps are Healthy on their first image. */
const HEALTHY_TIMEOUT_MS = 600_000;
/** From the first spec.image change until every rollout has ended. */
const ROLLOUT_TIMEOUT_MS = 600_000;
/** After each event, until every app is covered again. */
const COVERED_TIMEOUT_MS = 180_000;
/** Between two looks at the group: each reads every live replica's /metrics. */
const SAMPLE_MS = 500;
/** Longest wait for half the rollouts to reach their first step before the kill. */
const FIRST_STEP_TIMEOUT_MS = 120_000;
const METRICS = [
  "canaryapp_shards_held",
  "canaryapp_shard_apps",
  "canaryapp_shards_loading",
  "process_resident_memory_bytes",
  "canaryapp_api_writes_total",
] as const;

/** Progress on stderr, with the time: where a run that fails stopped. */
const progress = (what: string): void => console.error(`${new Date().toISOString()} churn: ${what}`);

const rollingName = (i: number) => `roll-${i}`;
const failing = (i: number) => i % FAIL_EVERY === FAIL_EVERY - 1;

/** Runs the bench on a control plane of its own (audited, with an observer for the bench's own reads). */
export async function benchChurn(options: ChurnOptions): Promise<ChurnResult> {
  const cp = await startControlPlane({ profile: "api", observer: true, audit: true });
  const cleanups: (() => unknown)[] = [];
  try {
    return await run(cp, options, cleanups);
  } finally {
    for (const cleanup of cleanups.reverse()) await Promise.resolve(cleanup()).catch(() => undefined);
    await cp.stop();
  }
}

/** The rolling apps as the API server has them. */
async function listRolling(kc: PooledKubeConfig): Promise<CanaryApp[]> {
  const list = (await kc
    .makeApiClient(CustomObjectsApi)
    .listNamespacedCustomObject({ group: GROUP, version: VERSION, plural: PLURAL, namespace: ROLLING })) as {
    items: CanaryApp[];
  };
  return list.items;
}

async function run(cp: ControlPlane, options: ChurnOptions, cleanups: (() => unknown)[]): Promise<ChurnResult> {
  const { apps, rolling } = options;
  const idle = apps - rolling;
  if (!Number.isInteger(rolling) || rolling < 1 || idle < 0)
    throw new Error(`churn: ${rolling} of ${apps} apps roll out`);
  if (cp.observerKubeconfigPath === undefined || cp.auditLogPath === undefined) {
    throw new Error("churn: the control plane has no observer or no audit log");
  }
  // The bench's own reads and writes go through the observer: the audited server serves the replicas alone.
  const kc = loadKubeConfig(cp.observerKubeconfigPath);
  const core = kc.makeApiClient(CoreV1Api);
  for (const name of [IDLE, ROLLING, LEASES]) await core.createNamespace({ body: { metadata: { name } } });

  const exporter = await startTestExporter();
  cleanups.push(() => exporter.stop());
  const prometheus = await startPrometheus({ targets: [exporter.target], scrapeIntervalSeconds: 1 });
  cleanups.push(() => prometheus.stop());
  await untilScraping(prometheus);
  // Not a hot loop over the rolling apps' Deployments: a pass every 400 ms.
  const deployments = autoRollout(kc, ROLLING, { intervalMs: 400 });
  cleanups.push(() => deployments.stop());

  const coordination = kc.makeApiClient(CoordinationV1Api);
  const shareHolders = () => holdersOf(coordination, LEASES, SHARES, GROUP_NAME);

  // The replicas.
  const flags = [
    `--kubeconfig=${cp.kubeconfigPath}`,
    `--namespaces=${IDLE},${ROLLING}`,
    `--lease-namespace=${LEASES}`,
    `--shards=${SHARES}`,
  ];
  const everyProcess: { process: ControllerProcess; killedAt?: number }[] = [];
  const start = (identity: string): ControllerProcess => {
    const process = spawnController(flags, identity);
    everyProcess.push({ process });
    return process;
  };
  cleanups.push(() => Promise.all(everyProcess.map((p) => p.process.kill("SIGKILL"))));
  const live = ["churn-a", "churn-b", "churn-c"].map(start);
  await Promise.all(live.map((c) => untilReady(c)));
  while ((await shareHolders()).some((h) => h === undefined)) await sleep(250);
  progress(`${live.length} replicas hold all ${SHARES} shares; creating ${idle} idle and ${rolling} rolling apps`);

  const rollingKeys = Array.from({ length: rolling }, (_, i) => `${ROLLING}/${rollingName(i)}`);
  const rollingByShare = (share: number) => rollingKeys.filter((key) => shareOf(key, SHARES) === share);
  const perReplica = async (replicas: readonly ControllerProcess[]): Promise<ReplicaFigures[]> => {
    const holders = await shareHolders();
    return await Promise.all(
      replicas.map(async (c) => {
        const [shares = 0, inShares = 0, loading = 0, rss = 0, writes = 0] = await c.metrics(METRICS);
        return {
          identity: c.identity,
          shares,
          apps: inShares,
          rollingApps: rollingKeys.filter((key) => holders[shareOf(key, SHARES)] === c.identity).length,
          loading,
          rssMiB: Math.round(rss / 2 ** 20),
          writes,
        };
      }),
    );
  };

  // The apps: the rolling ones with checks the exporter decides, the idle ones as the other benches make them.
  const rollingApps = canaryApps(kc, ROLLING);
  for (let i = 0; i < rolling; i++) {
    exporter.set(TEST_METRICS.errors, rollingName(i), 0);
    exporter.set(TEST_METRICS.latency, rollingName(i), 120);
    exporter.set(TEST_METRICS.requests, rollingName(i), 1000);
  }
  const created = Date.now();
  await Promise.all([
    createApps(kc, IDLE, idle),
    (async () => {
      for (let i = 0; i < rolling; i += IN_FLIGHT) {
        await Promise.all(
          Array.from({ length: Math.min(IN_FLIGHT, rolling - i) }, (_, j) =>
            rollingApps.create({
              metadata: { name: rollingName(i + j) },
              spec: appSpec({ prometheus }, rollingName(i + j)),
            }),
          ),
        );
      }
    })(),
  ]);
  await Promise.all([untilAllRouted(kc, IDLE, idle), untilAllRouted(kc, ROLLING, rolling)]);
  const secondsToAllChildren = (Date.now() - created) / 1000;
  progress(`all ${apps} apps have their children after ${secondsToAllChildren.toFixed(1)} s`);
  const routed = Date.now();
  for (;;) {
    const list = await listRolling(kc);
    const healthy = list.filter(
      (app) => app.status?.phase === "Healthy" && app.status.primaryImage === image(app.metadata.name ?? "", "v1"),
    ).length;
    if (healthy >= rolling) break;
    if (Date.now() - routed > HEALTHY_TIMEOUT_MS)
      throw new Error(`churn: ${healthy} of ${rolling} rolling apps Healthy`);
    await sleep(1000);
  }
  const secondsToRollingHealthy = (Date.now() - routed) / 1000;
  progress(`the ${rolling} rolling apps are Healthy on v1 after ${secondsToRollingHealthy.toFixed(1)} s more`);
  await sleep(5_000);
  const before = await perReplica(live);

  // The rollouts: every FAIL_EVERY-th image fails its first analysis.
  const scripts: AppScript[] = Array.from({ length: rolling }, (_, i) => ({
    name: rollingName(i),
    initialImage: image(rollingName(i), "v1"),
    waves: [{ image: image(rollingName(i), "v2"), passes: !failing(i) }],
  }));
  for (const [i, script] of scripts.entries()) if (failing(i)) exporter.set(TEST_METRICS.errors, script.name, 3);
  const origin = Date.now();
  const timeline: string[] = [];
  const mark = (what: string) => {
    timeline.push(`${Date.now() - origin} ${what}`);
    progress(`+${Date.now() - origin} ms: ${what}`);
  };
  const generations = new Map<string, number>();
  const patchedAt = new Map<string, number>();
  for (let i = 0; i < rolling; i += IN_FLIGHT) {
    await Promise.all(
      scripts.slice(i, i + IN_FLIGHT).map(async (script) => {
        const app = await rollingApps.patchSpec(script.name, { image: script.waves[0]?.image ?? "" });
        generations.set(script.name, app.metadata.generation ?? 0);
        patchedAt.set(script.name, Date.now());
      }),
    );
  }
  mark(`${rolling} rollouts started`);

  // Follows the rollouts until each has come to rest, in the background.
  const endedAt = new Map<string, number>();
  let latest: CanaryApp[] = [];
  const rollouts = (async () => {
    while (endedAt.size < rolling && Date.now() - origin < ROLLOUT_TIMEOUT_MS) {
      latest = await listRolling(kc).catch(() => latest);
      for (const app of latest) {
        const name = app.metadata.name ?? "";
        if (!endedAt.has(name) && atRest(app, generations.get(name) ?? Infinity)) endedAt.set(name, Date.now());
      }
      await sleep(1000);
    }
  })();
  const midRollout = (key: string) => !endedAt.has(key.slice(ROLLING.length + 1));

  // The kill, once about half the rollouts have reached their first step.
  const half = Math.ceil(rolling / 2);
  for (;;) {
    // Its own list, four times as often as the rollouts' follower: the first steps come within seconds.
    const list = await listRolling(kc).catch(() => latest);
    const reached = list.filter((app) => reachedFirstStep(app, generations.get(app.metadata.name ?? "") ?? 0)).length;
    if (reached >= half || Date.now() - origin > FIRST_STEP_TIMEOUT_MS) {
      mark(`${reached} of ${rolling} rollouts at their first step or beyond`);
      break;
    }
    await sleep(250);
  }
  let mostAppsCounted = 0;
  let mostSharesCounted = 0;
  /** The replicas known to serve /metrics; one that does not yet counts as holding nothing. */
  const serving = new Set<ControllerProcess>(live);
  /**
   * Looks at the group every SAMPLE_MS from `since` until `done` (or the timeout): the share Leases, and what
   * each of `replicas` (the live ones) says it holds.
   */
  const follow = async (
    since: number,
    replicas: readonly ControllerProcess[],
    done: (sample: CoverageSample) => boolean,
  ): Promise<CoverageSample[]> => {
    const samples: CoverageSample[] = [];
    while (Date.now() - since < COVERED_TIMEOUT_MS) {
      try {
        const holders = await shareHolders();
        const figures = await Promise.all(
          replicas.map(async (c) => {
            const [shares = 0, inShares = 0, loading = 0] = serving.has(c) ? await c.metrics(METRICS.slice(0, 3)) : [];
            return { identity: c.identity, shares, apps: inShares, loading };
          }),
        );
        const sample = { at: Date.now(), holders, replicas: figures };
        samples.push(sample);
        const c = coverageOf(sample, apps);
        mostAppsCounted = Math.max(mostAppsCounted, c.appsCovered);
        mostSharesCounted = Math.max(mostSharesCounted, c.sharesHeld);
        if (done(sample)) return samples;
      } catch (error) {
        progress(`a look at the group failed: ${String(error)}`);
      }
      await sleep(SAMPLE_MS);
    }
    return samples;
  };
  const firstAt = (samples: CoverageSample[], since: number, test: (s: CoverageSample) => boolean) => {
    const at = samples.find(test)?.at;
    return at === undefined ? undefined : at - since;
  };
  const covered = (s: CoverageSample) => coverageOf(s, apps).covered;
  const leastCovered = (samples: CoverageSample[]) =>
    samples.reduce((least, s) => Math.min(least, coverageOf(s, apps).appsCovered), apps);

  /**
   * The figures of one event (the kill, the addition) at `at`, from the samples that followed it: `first` is when
   * the event's first effect showed, `done` when every app was covered again.
   */
  const churnEvent = (
    replica: string,
    at: number,
    shares: number[],
    samples: CoverageSample[],
    first: (s: CoverageSample) => boolean,
    done: (s: CoverageSample) => boolean,
  ): ChurnEvent => {
    const rollingApps = shares.flatMap(rollingByShare);
    return {
      replica,
      atMs: at - origin,
      shares,
      rollingApps: rollingApps.length,
      midRollout: rollingApps.filter(midRollout).length,
      firstMs: firstAt(samples, at, first),
      asAssignedMs: firstAt(samples, at, (s) => coverageOf(s, apps).asAssigned),
      coveredAgainMs: firstAt(samples, at, done),
      uncoveredMs: uncoveredMs(samples.map((s) => ({ at: s.at, covered: covered(s) }))),
      leastCovered: leastCovered(samples),
    };
  };

  const [victim, ...survivors] = live;
  if (victim === undefined) throw new Error("churn: no replica");
  const victimShares = (await shareHolders()).flatMap((h, share) => (h === victim.identity ? [share] : []));
  await victim.kill("SIGKILL");
  const killedAt = Date.now();
  const victimEntry = everyProcess.find((p) => p.process === victim);
  if (victimEntry !== undefined) victimEntry.killedAt = killedAt;
  mark(`SIGKILL ${victim.identity}, holding shares ${victimShares.join(",")}`);
  const afterKill = await follow(killedAt, survivors, covered);
  const kill = churnEvent(
    victim.identity,
    killedAt,
    victimShares,
    afterKill,
    (s) => coverageOf(s, apps).sharesWithoutLiveHolder === 0,
    covered,
  );
  mark(
    kill.coveredAgainMs === undefined
      ? `NOT covered again within ${COVERED_TIMEOUT_MS} ms of the kill`
      : `every app covered again, ${kill.coveredAgainMs} ms after the kill`,
  );

  // The addition: a replica with a new identity.
  const added = start("churn-d");
  const addedAt = Date.now();
  mark(`started ${added.identity}`);
  let readyMs: number | undefined;
  void untilReady(added).then(
    () => (readyMs = Date.now() - addedAt),
    () => undefined,
  );
  void added.port().then(
    () => serving.add(added),
    () => undefined,
  );
  const now = [...survivors, added];
  const afterAdd = await follow(addedAt, now, (s) => covered(s) && coverageOf(s, apps).asAssigned);
  const addedShares = (await shareHolders()).flatMap((h, share) => (h === added.identity ? [share] : []));
  const addFigures = churnEvent(
    added.identity,
    addedAt,
    addedShares,
    afterAdd,
    (s) => s.holders.includes(added.identity),
    (s) => covered(s) && coverageOf(s, apps).asAssigned,
  );
  mark(
    addFigures.coveredAgainMs === undefined
      ? `NOT covered as assigned within ${COVERED_TIMEOUT_MS} ms of the addition`
      : `every share as assigned and every app covered again, ${addFigures.coveredAgainMs} ms after the addition`,
  );

  // The end of the rollouts.
  await rollouts;
  for (const c of now) {
    if (c.child.exitCode !== null || c.child.signalCode !== null) {
      mark(`${c.identity} has exited (${c.child.exitCode ?? c.child.signalCode ?? ""})`);
    }
  }
  const lastEnd = Math.max(...endedAt.values());
  mark(endedAt.size === rolling ? "every rollout ended" : `${rolling - endedAt.size} rollouts did NOT end`);
  // The route and the secondary's deletion follow the status: a moment for the last of them.
  await sleep(3_000);
  const finalApps = new Map((await listRolling(kc)).map((a) => [a.metadata.name ?? "", a]));
  const finalDeployments = new Map<string, V1Deployment>(
    (await kc.makeApiClient(AppsV1Api).listNamespacedDeployment({ namespace: ROLLING })).items.map((d) => [
      d.metadata?.name ?? "",
      d,
    ]),
  );
  const finalRoutes = new Map(
    (
      (await kc.makeApiClient(CustomObjectsApi).listNamespacedCustomObject({
        ...ISTIO_NETWORKING,
        namespace: ROLLING,
        plural: "virtualservices",
      })) as { items: { metadata?: { name?: string } }[] }
    ).items.map((vs) => [vs.metadata?.name ?? "", vs]),
  );
  const endings: RolloutEnding[] = scripts.map((script) => {
    const names = childNames(script.name);
    const ended = endedAt.get(script.name);
    const patched = patchedAt.get(script.name) ?? origin;
    return {
      name: script.name,
      passes: script.waves[0]?.passes ?? true,
      seconds: ended === undefined ? undefined : (ended - patched) / 1000,
      problems: endingProblems(script, {
        app: finalApps.get(script.name),
        primary: finalDeployments.get(names.primary),
        secondary: finalDeployments.get(names.secondary),
        virtualService: finalRoutes.get(names.virtualService),
      }),
    };
  });
  const after = await perReplica(now);
  const end = Date.now();

  const keys = [...Array.from({ length: idle }, (_, i) => `${IDLE}/app-${i}`), ...rollingKeys];
  const audit = await auditLog(cp.auditLogPath, [IDLE, ROLLING], { apps: keys, origin });
  const shareOverlaps = overlappingShareTenures(everyProcess, end);
  const addCovered = addFigures.coveredAgainMs === undefined ? undefined : addedAt + addFigures.coveredAgainMs;
  return {
    apps,
    rolling,
    failEvery: FAIL_EVERY,
    shares: SHARES,
    intervalSeconds: INTERVAL_SECONDS,
    secondsToAllChildren,
    secondsToRollingHealthy,
    before,
    after,
    kill,
    add: { ...addFigures, readyMs },
    overall: {
      spanMs: kill.coveredAgainMs === undefined || addCovered === undefined ? undefined : addCovered - killedAt,
      uncoveredMs: kill.uncoveredMs + addFigures.uncoveredMs,
    },
    mostAppsCounted,
    mostSharesCounted,
    rollouts: rolloutFigures(
      endings,
      ROLLOUT_TIMEOUT_MS / 1000,
      endedAt.size === rolling ? (lastEnd - origin) / 1000 : undefined,
    ),
    audit: auditFigures(audit),
    shareOverlaps,
    timeline,
  };
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? "").href) {
  const { formatChurn } = await import("./churn-report.js");
  const result = await benchChurn({ apps: Number(process.argv[2] ?? 5000), rolling: Number(process.argv[3] ?? 200) });
  for (const line of formatChurn(result)) console.log(line);
  console.log(JSON.stringify(result));
}

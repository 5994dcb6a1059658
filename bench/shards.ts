/**
 * Sharding at scale (ADR 0016): 3 controller replicas with 32 shares, N apps (default 3,000). Measures the
 * Lease writes per second at rest, then creates the apps and reports, per replica, the apps in its shares,
 * its writes and its RSS; then SIGKILLs one replica and times until the others hold all its shares and until
 * they have the apps' work. `make bench` runs it with BENCH_SHARDS=1; alone: `node dist/bench/shards.js [apps]`.
 */
import { CoordinationV1Api, CoreV1Api } from "@kubernetes/client-node";
import { pathToFileURL } from "node:url";
import { startControlPlane } from "../e2e/cluster/index.js";
import { loadKubeConfig } from "../src/kube/client.js";
import { SHARD_LABELS } from "../src/controller/shard-leases.js";
import { DEFAULT_LEASE_NAME } from "../src/config.js";
import { SHARE_LOG } from "../src/controller/held-shares.js";
import { spawnController, type ControllerProcess } from "../test/support/process.js";
import { shareHolders as holdersOf } from "../test/support/share-holders.js";
import { createApps, sleep, untilAllRouted, untilReady } from "./apps.js";

const SHARES = 32;
const GROUP = DEFAULT_LEASE_NAME;

export interface ShardsResult {
  apps: number;
  replicas: number;
  shares: number;
  /** Lease writes per second by all replicas together at rest, counted from resourceVersion changes. */
  leaseWritesPerSecondAtRest: number;
  /** Seconds from the first create to every app's VirtualService. */
  secondsToAllChildren: number;
  perReplica: {
    identity: string;
    shares: number;
    apps: number;
    /** CanaryApps in its cache, and all objects in its caches (ADR 0016: only those of its shares). */
    cachedApps: number;
    cachedObjects: number;
    writes: number;
    rssMiB: number;
  }[];
  /** From the SIGKILL until the survivors hold every share of the killed replica. */
  takeoverMs: number;
  /** From the SIGKILL until the survivors' shares cover every app again, loaded (no share still loading). */
  appsCoveredAgainMs: number;
}

/** Progress on stderr, with the time: where a run that fails stopped. */
const progress = (what: string): void => console.error(`${new Date().toISOString()} shards: ${what}`);

/**
 * A metric of a replica, asked again (up to five times) when the request fails: a reused keep-alive
 * connection may be reset as the server closes it. A replica that has exited fails with its last log lines.
 */
async function metricOf(c: ControllerProcess, name: string): Promise<number> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await c.metric(name);
    } catch (error) {
      if (c.child.exitCode !== null || c.child.signalCode !== null || attempt >= 5) {
        const last = c.logs.slice(-20).map((l) => JSON.stringify(l));
        throw new Error(
          `${c.identity} (exit ${c.child.exitCode ?? c.child.signalCode ?? "none"}): ${name}: ${last.join("\n")}`,
          { cause: error },
        );
      }
      progress(`${c.identity}: ${name}: ${String(error)}; asking again`);
      await sleep(200);
    }
  }
}

async function perReplica(controllers: ControllerProcess[]): Promise<ShardsResult["perReplica"]> {
  return await Promise.all(
    controllers.map(async (c) => ({
      identity: c.identity,
      shares: await metricOf(c, "canaryapp_shards_held"),
      apps: await metricOf(c, "canaryapp_shard_apps"),
      cachedApps: await metricOf(c, 'canaryapp_cached_objects{cache="canaryapps"}'),
      cachedObjects: await metricOf(c, "canaryapp_cached_objects"),
      writes: await metricOf(c, "canaryapp_api_writes_total"),
      rssMiB: Math.round((await metricOf(c, "process_resident_memory_bytes")) / 2 ** 20),
    })),
  );
}

export async function benchShards(kubeconfigPath: string, apps: number): Promise<ShardsResult> {
  const kc = loadKubeConfig(kubeconfigPath);
  const namespace = `bench-shards-${Date.now() % 100_000}`;
  await kc.makeApiClient(CoreV1Api).createNamespace({ body: { metadata: { name: namespace } } });
  const coordination = kc.makeApiClient(CoordinationV1Api);
  const leases = async () =>
    (await coordination.listNamespacedLease({ namespace, labelSelector: `${SHARD_LABELS.group}=${GROUP}` })).items;
  const shareHolders = () => holdersOf(coordination, namespace, SHARES, GROUP);

  const flags = [
    `--kubeconfig=${kubeconfigPath}`,
    `--namespaces=${namespace}`,
    `--lease-namespace=${namespace}`,
    `--shards=${SHARES}`,
  ];
  const controllers = ["shard-a", "shard-b", "shard-c"].map((id) => spawnController(flags, id));
  try {
    await Promise.all(controllers.map((c) => untilReady(c)));
    progress("replicas ready");
    while ((await shareHolders()).some((h) => h === undefined)) await sleep(250);

    // At rest: every Lease write changes its resourceVersion; polled twice a second, none is missed (each
    // Lease is written at most every 6 s).
    const windowMs = 20_000;
    const seen = new Set<string>();
    const sample = async () => {
      for (const lease of await leases()) seen.add(`${lease.metadata?.name}@${lease.metadata?.resourceVersion}`);
    };
    await sample();
    const initial = seen.size;
    const restStart = Date.now();
    while (Date.now() - restStart < windowMs) {
      await sleep(500);
      await sample();
    }
    const leaseWritesPerSecondAtRest = (seen.size - initial) / ((Date.now() - restStart) / 1000);

    progress(`at rest: ${leaseWritesPerSecondAtRest.toFixed(2)} Lease writes/s; creating ${apps} apps`);
    const created = Date.now();
    await createApps(kc, namespace, apps);
    await untilAllRouted(kc, namespace, apps);
    const secondsToAllChildren = (Date.now() - created) / 1000;
    await sleep(5_000);
    const before = await perReplica(controllers);
    progress(`all children after ${secondsToAllChildren.toFixed(1)} s; killing ${controllers[0]?.identity ?? ""}`);

    const [victim, ...survivors] = controllers;
    if (victim === undefined) throw new Error("no replica");
    const logsBefore = new Map(survivors.map((c) => [c, c.logs.length]));
    const theirs = (await shareHolders()).flatMap((h, share) => (h === victim.identity ? [share] : []));
    await victim.kill("SIGKILL");
    const killedAt = Date.now();
    const live = new Set(survivors.map((c) => c.identity));
    for (;;) {
      const holders = await shareHolders();
      if (theirs.every((share) => live.has(holders[share] ?? ""))) break;
      await sleep(100);
    }
    const takeoverMs = Date.now() - killedAt;
    progress(`shares taken over after ${takeoverMs} ms`);
    // Covered: the survivors' shares hold every app and none of them is still loading its caches (a share's
    // apps are worked on only once its load is over).
    for (;;) {
      const covered = (await Promise.all(survivors.map((c) => metricOf(c, "canaryapp_shard_apps")))).reduce(
        (a, b) => a + b,
      );
      const loading = (await Promise.all(survivors.map((c) => metricOf(c, "canaryapp_shards_loading")))).reduce(
        (a, b) => a + b,
      );
      if (covered >= apps && loading === 0) break;
      await sleep(100);
    }
    const appsCoveredAgainMs = Date.now() - killedAt;
    for (const c of survivors) {
      // Shares a survivor gave up after the kill, or whose fence closed and opened again (renewals late), and why.
      const since = c.logs.slice(logsBefore.get(c) ?? 0);
      const why = new Map<string, number>();
      for (const l of since) {
        const msg = String(l["msg"]);
        if (
          msg === "gave up a share" ||
          msg === SHARE_LOG.closed ||
          msg === SHARE_LOG.reopened ||
          msg.startsWith("could not")
        ) {
          const err = l["err"] as { message?: unknown } | undefined;
          const what = `${msg}: ${JSON.stringify(l["why"] ?? err?.message ?? "")}`.slice(0, 160);
          why.set(what, (why.get(what) ?? 0) + 1);
        }
      }
      const tookLines = since.filter((l) => l["msg"] === "took a share").length;
      progress(`${c.identity}: since the kill, took ${tookLines} shares; ${JSON.stringify([...why])}`);
      for (const line of c.logs.filter((l) => l["msg"] === "loaded the objects of shares gained").slice(-4)) {
        progress(`${c.identity}: loaded shares ${JSON.stringify(line["shares"])} in ${String(line["ms"])} ms`);
      }
    }
    return {
      apps,
      replicas: controllers.length,
      shares: SHARES,
      leaseWritesPerSecondAtRest: Math.round(leaseWritesPerSecondAtRest * 100) / 100,
      secondsToAllChildren,
      perReplica: before,
      takeoverMs,
      appsCoveredAgainMs,
    };
  } finally {
    await Promise.all(controllers.map((c) => c.kill("SIGKILL")));
  }
}

/** The figures as lines. */
export function formatShards(r: ShardsResult): string[] {
  return [
    `shards: ${r.replicas} replicas, ${r.shares} shares: ${r.leaseWritesPerSecondAtRest} Lease writes/s at rest (all replicas)`,
    `shards: ${r.apps} CanaryApps → all children in ${r.secondsToAllChildren.toFixed(1)} s`,
    ...r.perReplica.map(
      (p) =>
        `shards: ${p.identity}: ${p.shares} shares, ${p.apps} apps (cached ${p.cachedApps} apps, ${p.cachedObjects} objects), ${p.writes} writes, rss ${p.rssMiB} MiB`,
    ),
    `shards: a replica SIGKILLed: its shares held by the others after ${(r.takeoverMs / 1000).toFixed(1)} s, all apps covered after ${(r.appsCoveredAgainMs / 1000).toFixed(1)} s`,
  ];
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? "").href) {
  const apps = Number(process.argv[2] ?? 3000);
  const controlPlane = await startControlPlane({ profile: "api" });
  try {
    const result = await benchShards(controlPlane.kubeconfigPath, apps);
    for (const line of formatShards(result)) console.log(line);
    console.log(JSON.stringify(result));
  } finally {
    await controlPlane.stop();
  }
}

import { loadKubeConfig } from "../src/kube/client.js";
import { createTestNamespace } from "../test/support/kube.js";
import { spawnController, type ControllerProcess } from "../test/support/process.js";
import {
  cpuSecondsOf,
  createApps,
  localApiServerPid,
  rssMiBOf,
  sleep,
  untilAllRouted,
  untilQuiet,
  untilReady,
  untilWritesSettle,
} from "./apps.js";
import { benchFloor, type FloorResult } from "./floor.js";

/** One figure of the scale table: the controller's value, the floor's where there is one, and their ratio. */
export interface Figure {
  value: number;
  floor?: number;
  ratio?: number;
  /** The issue's goal for it, for the reader; nothing asserts it. */
  goal?: string;
}

export interface ScaleResult {
  apps: number;
  /** The controller's flags besides kubeconfig, namespace and HTTP address (the defaults, as deployed). */
  flags: string[];
  /** V8's old-space limit of the controller process; undefined: none (the default). */
  maxOldSpaceMiB: number | undefined;
  table: {
    /** From the first create to every app's VirtualService existing (the floor: to its last write). */
    secondsToAllChildren: Figure;
    writesPerNewApp: Figure;
    /** Every request to the API server while the apps were created and settled, per app. */
    requestsPerApp: Figure;
    /** After the writes settled, no cap on the heap. */
    rssMiBAfterSettling: Figure;
    /** A second process over the same settled apps: from its start to its first reconcile (median of the restarts). */
    secondsToFirstReconcile: Figure;
    /** Requests in the quiet window after everything settled (no Lease: leader election is off here). */
    requestsAtRest: Figure;
  };
  /** Writes per new app by verb (apply, status, event, ...). */
  writesPerNewAppByVerb: Record<string, number>;
  /** The requests at rest by verb (get, watch, …): a watch the server ended and the informer renewed is one. */
  requestsAtRestByVerb: Record<string, number>;
  heapUsedMiB: number;
  restWindowSeconds: number;
  cpuSecondsAtRest: number;
  /**
   * The controller's CPU from the first create until every app was routed, per app (milliseconds): on a
   * machine it shares with the API server, time it takes from the API server.
   */
  cpuMsPerApp: number;
  /** Reconciles per app from the first create until the writes settled (each change to an app or a child queues one). */
  reconcilesPerApp: number;
  floor: FloorResult;
  /**
   * Controllers started one after the other over the same, unchanged apps (warm restarts): the medians, the
   * writes and Events of all of them, and each run.
   */
  restart: {
    secondsToFirstReconcile: number;
    secondsToAllReconciled: number;
    writes: number;
    events: number;
    runs: RestartRun[];
  };
}

/** One warm restart, timed by the controller's own log lines (nothing asks it anything meanwhile). */
export interface RestartRun {
  /** Process start → "first reconcile done". */
  secondsToFirstReconcile: number;
  /** Process start → "caught up: the queue ran empty" (every app reconciled once). */
  secondsToAllReconciled: number;
  /** Process start → "caches synced". */
  secondsToCachesSynced: number;
  /** The controller's CPU until its first reconcile (read from /proc as the log line is seen, within 20 ms). */
  controllerCpuSeconds: number;
  /** The local API server's CPU over the same window (it shares the machine); undefined if it is not local. */
  apiServerCpuSeconds: number | undefined;
  /** How long the bench waited for the API server to be at rest before starting the controller. */
  secondsWaitedForQuiet: number;
  writes: number;
  events: number;
}

/** Warm restarts per scale run; the table gives their median. */
export const RESTARTS = 3;

/** A figure beside its floor, and their ratio to two decimals (0 without a floor). */
export const ratio = (value: number, floor: number) => ({
  value,
  floor,
  ratio: floor > 0 ? Math.round((value / floor) * 100) / 100 : 0,
});
/** `n` to `digits` decimals. */
export const round = (n: number, digits = 1) => Math.round(n * 10 ** digits) / 10 ** digits;

/**
 * Many CanaryApps against one controller process with its default flags, as it runs in a cluster, beside
 * `floor` (measured by {@link scaleFloor} in the same run): time to converge, writes and requests, memory,
 * start-up and silence at rest — the controller's figures read from its own /metrics.
 */
/**
 * The floor of the scale table (bench/floor.ts: the same objects written by a plain script with 20 requests
 * in flight). Measured on a control plane of its own, as fresh as the controller's: one that already holds
 * the other's objects answers more slowly.
 */
export async function scaleFloor(kubeconfigPath: string, apps: number): Promise<FloorResult> {
  const kc = loadKubeConfig(kubeconfigPath);
  return await benchFloor(kc, kubeconfigPath, await createTestNamespace(kc, "floor"), apps);
}

export async function benchScale(
  kubeconfigPath: string,
  apps: number,
  floor: FloorResult,
  restWindowSeconds = 20,
  maxOldSpaceMiB?: number,
  /** Flags added to the controller's defaults (BENCH_CONTROLLER_FLAGS), to compare settings in like runs. */
  extraFlags: readonly string[] = [],
): Promise<ScaleResult> {
  const kc = loadKubeConfig(kubeconfigPath);

  const namespace = await createTestNamespace(kc, "bench");
  const previousOptions = process.env["NODE_OPTIONS"];
  if (maxOldSpaceMiB !== undefined) process.env["NODE_OPTIONS"] = `--max-old-space-size=${maxOldSpaceMiB}`;
  const flags = [`--kubeconfig=${kubeconfigPath}`, `--namespaces=${namespace}`, "--leader-elect=false", ...extraFlags];
  const controller = spawnController(flags, "bench");
  if (previousOptions === undefined) delete process.env["NODE_OPTIONS"];
  else process.env["NODE_OPTIONS"] = previousOptions;
  const requests = () => controller.metric("canaryapp_api_requests_total");
  try {
    await untilReady(controller);
    const requestsBefore = await requests();
    const pid = controller.child.pid ?? 0;
    const cpuAtStart = cpuSecondsOf(pid);
    const reconciles = () => controller.metric("canaryapp_reconcile_duration_seconds_count");
    const reconcilesAtStart = await reconciles();
    const started = Date.now();
    await createApps(kc, namespace, apps);
    // Watched, not polled: a list of every VirtualService a second is work for the API server the floor does not have.
    await untilAllRouted(kc, namespace, apps);
    const secondsToAllChildren = (Date.now() - started) / 1000;
    const cpuMsPerApp = round(((cpuSecondsOf(pid) - cpuAtStart) * 1000) / apps);
    // Let status writes and their watch events settle before measuring silence.
    const settled = await untilWritesSettle(controller);
    const requestsSettledByVerb = await byVerb(controller, "canaryapp_api_requests_total");
    const requestsSettled = Object.values(requestsSettledByVerb).reduce((sum, n) => sum + n, 0);
    const writesVerbs = await byVerb(controller, "canaryapp_api_writes_total");
    const reconcilesPerApp = round(((await reconciles()) - reconcilesAtStart) / apps);
    // CPU and RSS read from /proc, so that no scrape of /metrics (a page per app) falls inside the window.
    const cpuBefore = cpuSecondsOf(pid);
    await sleep(restWindowSeconds * 1000);
    const cpuSecondsAtRest = cpuSecondsOf(pid) - cpuBefore;
    const rssMiB = Math.round(rssMiBOf(pid));
    const requestsAtRestByVerb = difference(
      await byVerb(controller, "canaryapp_api_requests_total"),
      requestsSettledByVerb,
    );
    const requestsAtRest = Object.values(requestsAtRestByVerb).reduce((sum, n) => sum + n, 0);
    const heapUsedMiB = Math.round((await controller.metric("nodejs_heap_size_used_bytes")) / 2 ** 20);
    await controller.kill("SIGTERM");
    const restart = await warmRestarts(flags, apps, localApiServerPid(kubeconfigPath));
    return {
      apps,
      flags: flags.slice(2),
      maxOldSpaceMiB,
      table: {
        secondsToAllChildren: {
          ...ratio(round(secondsToAllChildren), round(floor.secondsToAllChildren)),
          goal: "≤ 1.5× floor",
        },
        writesPerNewApp: {
          ...ratio(round(settled / apps), round(floor.writesPerApp)),
          goal: "as few as the state needs",
        },
        requestsPerApp: ratio(round((requestsSettled - requestsBefore) / apps), round(floor.requestsPerApp)),
        rssMiBAfterSettling: { value: rssMiB, goal: "≤ 400 MiB at 5,000 apps" },
        secondsToFirstReconcile: { value: round(restart.secondsToFirstReconcile), goal: "≤ 5 s" },
        requestsAtRest: { value: requestsAtRest, goal: "0" },
      },
      requestsAtRestByVerb,
      writesPerNewAppByVerb: Object.fromEntries(
        Object.entries(writesVerbs).map(([verb, n]) => [verb, round(n / apps, 2)]),
      ),
      heapUsedMiB,
      restWindowSeconds,
      cpuSecondsAtRest,
      cpuMsPerApp,
      reconcilesPerApp,
      floor,
      restart,
    };
  } finally {
    await controller.kill("SIGTERM");
  }
}

/** The scale table as printed by `make bench`: each figure with its floor, ratio and goal. */
export function formatScaleTable(result: ScaleResult): string {
  const rows: [string, Figure][] = [
    ["start → all children created (s)", result.table.secondsToAllChildren],
    ["writes per new app", result.table.writesPerNewApp],
    ["API requests per app", result.table.requestsPerApp],
    ["RSS after settling, uncapped (MiB)", result.table.rssMiBAfterSettling],
    ["start → first reconcile (s)", result.table.secondsToFirstReconcile],
    [`API requests at rest (${result.restWindowSeconds} s)`, result.table.requestsAtRest],
  ];
  const cell = (n: number | undefined) => (n === undefined ? "–" : String(n));
  const lines = [
    `scale: ${result.apps} apps, controller flags: ${result.flags.join(" ") || "(defaults)"}`,
    "| | canaryapp | floor | ratio | goal |",
    "|---|---|---|---|---|",
    ...rows.map(
      ([name, f]) =>
        `| ${name} | ${f.value} | ${cell(f.floor)} | ${f.ratio === undefined ? "–" : `${f.ratio}×`} | ${f.goal ?? ""} |`,
    ),
    `writes per new app by verb: ${JSON.stringify(result.writesPerNewAppByVerb)}; requests at rest by verb: ${JSON.stringify(result.requestsAtRestByVerb)}; heap used ${result.heapUsedMiB} MiB`,
  ];
  return lines.join("\n");
}

/** The middle value of `values` (the mean of the two middle ones for an even count); 0 for none. */
export const median = (values: number[]): number => {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1 ? (sorted[mid] ?? 0) : ((sorted[mid - 1] ?? 0) + (sorted[mid] ?? 0)) / 2;
};

/**
 * Restarts a controller over `apps` settled apps {@link RESTARTS} times, each once the API server is at rest
 * (the plane just filled by the bench is still busy with it for a while): the medians and every run.
 */
export async function warmRestarts(
  flags: string[],
  apps: number,
  apiServerPid: number | undefined,
): Promise<ScaleResult["restart"]> {
  const runs: RestartRun[] = [];
  for (let i = 0; i < RESTARTS; i++) runs.push(await warmRestart(flags, apps, apiServerPid));
  return {
    secondsToFirstReconcile: median(runs.map((r) => r.secondsToFirstReconcile)),
    secondsToAllReconciled: median(runs.map((r) => r.secondsToAllReconciled)),
    writes: runs.reduce((sum, r) => sum + r.writes, 0),
    events: runs.reduce((sum, r) => sum + r.events, 0),
    runs,
  };
}

/** Starts a controller over `apps` settled apps: how long until it synced, reconciled once and caught up, and what it wrote. */
async function warmRestart(flags: string[], apps: number, apiServerPid: number | undefined): Promise<RestartRun> {
  const secondsWaitedForQuiet = apiServerPid === undefined ? 0 : await untilQuiet(apiServerPid);
  const apiCpuBefore = apiServerPid === undefined ? 0 : cpuSecondsOf(apiServerPid);
  const started = Date.now();
  const controller = spawnController(flags, "bench-restart");
  const since = (line: Record<string, unknown>) => ((line["time"] as number) - started) / 1000;
  try {
    const first = await controller.untilLog("first reconcile done");
    const controllerCpuSeconds = cpuSecondsOf(controller.child.pid ?? 0);
    const apiServerCpuSeconds =
      apiServerPid === undefined ? undefined : round(cpuSecondsOf(apiServerPid) - apiCpuBefore, 2);
    const synced = await controller.untilLog("caches synced; starting workers");
    const caughtUp = await controller.untilLog("caught up: the queue ran empty");
    if ((caughtUp["reconciles"] as number) < apps) {
      throw new Error(
        `the queue ran empty after ${String(caughtUp["reconciles"])} reconciles, fewer than the ${apps} apps`,
      );
    }
    await sleep(3000);
    return {
      secondsToFirstReconcile: since(first),
      secondsToAllReconciled: since(caughtUp),
      secondsToCachesSynced: since(synced),
      controllerCpuSeconds,
      apiServerCpuSeconds,
      secondsWaitedForQuiet,
      writes: await controller.metric("canaryapp_api_writes_total"),
      events: (await byVerb(controller, "canaryapp_api_writes_total"))["event"] ?? 0,
    };
  } finally {
    await controller.kill("SIGTERM");
  }
}

/** A counter family of the controller's /metrics summed by its `verb` label. */
async function byVerb(controller: ControllerProcess, family: string): Promise<Record<string, number>> {
  const text = await (await fetch(`http://127.0.0.1:${await controller.port()}/metrics`)).text();
  const sums: Record<string, number> = {};
  for (const line of text.split("\n")) {
    if (!line.startsWith(`${family}{`)) continue;
    const verb = /verb="([^"]*)"/.exec(line)?.[1] ?? "";
    sums[verb] = (sums[verb] ?? 0) + Number(line.slice(line.lastIndexOf(" ") + 1));
  }
  return sums;
}

/** `after` less `before`, by key, leaving out keys that did not change. */
function difference(after: Record<string, number>, before: Record<string, number>): Record<string, number> {
  return Object.fromEntries(
    Object.entries(after)
      .map(([key, n]): [string, number] => [key, n - (before[key] ?? 0)])
      .filter(([, n]) => n !== 0),
  );
}

/**
 * The figures of the shards-under-churn bench (bench/churn.ts) and what is judged from them, without I/O:
 * whether the apps are covered, whether each rolled-out app ended as its image calls for, and the report's
 * lines.
 */
import type { V1Deployment } from "@kubernetes/client-node";
import type { CanaryApp } from "../src/api/types.js";
import { assignShares } from "../src/controller/shards.js";
import { endStateProblems, type AppScript } from "../test/chaos/invariants.js";
import { appPoint, deploymentPoint, routePoint } from "../test/chaos/world.js";
import type { WriteAudit } from "../test/support/write-audit.js";

/** A replica's share of the work, as its /metrics tells it. */
export interface ReplicaFigures {
  identity: string;
  /** `canaryapp_shards_held`. */
  shares: number;
  /** `canaryapp_shard_apps`: the apps in the shares it holds. */
  apps: number;
  /** Of those, the apps that roll out (by the share Leases it holds). */
  rollingApps: number;
  /** `canaryapp_shards_loading`. */
  loading: number;
  /** `process_resident_memory_bytes`, in MiB. */
  rssMiB: number;
  /** `canaryapp_api_writes_total`. */
  writes: number;
}

/** One look at the group: who holds each share by its Lease, and what each live replica says it works on. */
export interface CoverageSample {
  /** ms since the epoch. */
  at: number;
  /** The holder of each share's Lease (undefined: free or expired). */
  holders: (string | undefined)[];
  /** The replicas alive, by their /metrics. */
  replicas: Pick<ReplicaFigures, "identity" | "shares" | "apps" | "loading">[];
}

/** What a sample says. */
export interface Coverage {
  /**
   * Every share held by a live replica (by its Lease, and by the replicas' own count of the shares they hold),
   * no share still loading, and the live replicas' shares hold every app.
   */
  covered: boolean;
  /** The apps in the shares of the live replicas, summed (above `apps`: a share counted by two). */
  appsCovered: number;
  /** The shares the live replicas say they hold, summed (above the share count: a share held by two). */
  sharesHeld: number;
  loading: number;
  /** Shares whose Lease no live replica holds. */
  sharesWithoutLiveHolder: number;
  /** Whether every share is held by the replica the assignment of the live replicas gives it to. */
  asAssigned: boolean;
}

export function coverageOf(sample: CoverageSample, apps: number): Coverage {
  const live = new Set(sample.replicas.map((r) => r.identity));
  const sum = (f: (r: CoverageSample["replicas"][number]) => number) => sample.replicas.reduce((n, r) => n + f(r), 0);
  const appsCovered = sum((r) => r.apps);
  const sharesHeld = sum((r) => r.shares);
  const loading = sum((r) => r.loading);
  const sharesWithoutLiveHolder = sample.holders.filter((h) => h === undefined || !live.has(h)).length;
  const assigned = assignShares([...live], sample.holders.length);
  const asAssigned = sample.holders.every(
    (holder, share) => holder !== undefined && (assigned.get(holder) ?? []).includes(share),
  );
  return {
    covered:
      sharesWithoutLiveHolder === 0 && sharesHeld >= sample.holders.length && loading === 0 && appsCovered >= apps,
    appsCovered,
    sharesHeld,
    loading,
    sharesWithoutLiveHolder,
    asAssigned,
  };
}

/** The time in `samples` (in order) during which the apps were not all covered: each such sample to the next. */
export function uncoveredMs(samples: readonly { at: number; covered: boolean }[]): number {
  let total = 0;
  for (const [i, s] of samples.entries()) {
    const next = samples[i + 1];
    if (!s.covered && next !== undefined) total += next.at - s.at;
  }
  return total;
}

/** Whether the app rests after the change that made `generation`: its status is of it, no test runs, Healthy or Failed. */
export function atRest(app: CanaryApp, generation: number): boolean {
  const status = app.status;
  return (
    (app.metadata.generation ?? 0) >= generation &&
    (status?.observedGeneration ?? 0) >= generation &&
    status?.canary === undefined &&
    (status?.phase === "Healthy" || status?.phase === "Failed")
  );
}

/** Whether the test of spec.image has reached its first step (or is over). */
export function reachedFirstStep(app: CanaryApp, generation: number): boolean {
  const canary = app.status?.canary;
  return atRest(app, generation) || (canary?.image === app.spec.image && canary.step >= 0);
}

/** The objects an app ends with (undefined: missing). */
export interface FinalObjects {
  app: CanaryApp | undefined;
  primary: V1Deployment | undefined;
  secondary: V1Deployment | undefined;
  virtualService: unknown;
}

/**
 * What is wrong with how a rolled-out app ended (empty: nothing). Its script has one wave: the image it rolled
 * out to, passing its check or not. A passing image ends promoted: phase Healthy, the image on the primary (its
 * Deployment and status.primaryImage), not in status.failedImages. A failing one ends rolled back: phase Failed,
 * the image in status.failedImages once, the primary still on the first image. Either way the status is of the
 * app's generation, spec.image is the new image, no test runs, the route gives the primary everything and the
 * secondary is gone (the chaos suite's endState).
 */
export function endingProblems(script: AppScript, final: FinalObjects): string[] {
  const wave = script.waves.at(-1);
  if (wave === undefined) throw new Error(`${script.name}: no image rolled out`);
  const app = final.app === undefined ? undefined : appPoint(final.app);
  if (app === undefined || final.app === undefined) return ["the app is missing"];
  const problems: string[] = [];
  if (app.specImage !== wave.image) problems.push(`spec.image ${app.specImage}`);
  const generation = final.app.metadata.generation ?? 0;
  const observed = final.app.status?.observedGeneration ?? 0;
  if (observed < generation) problems.push(`status of generation ${observed}, the app's is ${generation}`);
  const phase = wave.passes ? "Healthy" : "Failed";
  if (app.phase !== phase) problems.push(`phase ${app.phase}`);
  problems.push(
    ...endStateProblems(script, {
      app,
      primaryImage: final.primary === undefined ? undefined : deploymentPoint(final.primary).image,
      route: final.virtualService === undefined ? undefined : routePoint(final.virtualService),
      secondaryExists: final.secondary !== undefined,
    }),
  );
  const recorded = app.failedImages.filter((f) => f.image === wave.image).length;
  if (recorded !== (wave.passes ? 0 : 1)) problems.push(`${wave.image} in status.failedImages ${recorded} times`);
  return problems;
}

/** One rolled-out app: whether its image passes, when it came to rest, and what is wrong with its end. */
export interface RolloutEnding {
  name: string;
  passes: boolean;
  /** Seconds from its spec.image change until it rested; undefined: it did not within the timeout. */
  seconds: number | undefined;
  problems: string[];
}

/** What the rollouts came to. */
export interface RolloutFigures {
  rolling: number;
  /** Images that pass their check, and that fail it. */
  passing: number;
  failing: number;
  /** Promoted as their image calls for, and rolled back as theirs does. */
  promoted: number;
  rolledBack: number;
  /** Apps that ended otherwise, or did not end within `timeoutSeconds`. */
  wrong: number;
  notEnded: number;
  /** The first of them, with what is wrong. */
  examples: string[];
  timeoutSeconds: number;
  /** From the first spec.image change until the last app rested (undefined: not all did). */
  secondsToAllEnded: number | undefined;
  /** Per app, from its spec.image change until it rested. */
  perAppSeconds: { median: number; max: number };
}

const MAX_EXAMPLES = 5;

export function rolloutFigures(
  endings: readonly RolloutEnding[],
  timeoutSeconds: number,
  secondsToAllEnded: number | undefined,
): RolloutFigures {
  const wrong = endings.filter((e) => e.seconds === undefined || e.problems.length > 0);
  const right = endings.filter((e) => !wrong.includes(e));
  const seconds = endings.flatMap((e) => (e.seconds === undefined ? [] : [e.seconds])).sort((a, b) => a - b);
  const round = (s: number) => Math.round(s * 10) / 10;
  return {
    rolling: endings.length,
    passing: endings.filter((e) => e.passes).length,
    failing: endings.filter((e) => !e.passes).length,
    promoted: right.filter((e) => e.passes).length,
    rolledBack: right.filter((e) => !e.passes).length,
    wrong: wrong.length,
    notEnded: endings.filter((e) => e.seconds === undefined).length,
    examples: wrong.slice(0, MAX_EXAMPLES).map((e) => {
      const what = [...(e.seconds === undefined ? [`did not end in ${timeoutSeconds} s`] : []), ...e.problems];
      return `${e.name} (${e.passes ? "passing" : "failing"}): ${what.join("; ")}`;
    }),
    timeoutSeconds,
    secondsToAllEnded: secondsToAllEnded === undefined ? undefined : round(secondsToAllEnded),
    perAppSeconds: {
      median: round(seconds[Math.floor((seconds.length - 1) / 2)] ?? 0),
      max: round(seconds.at(-1) ?? 0),
    },
  };
}

/** From one event (the kill, or the addition) until the apps were all covered again. */
export interface ChurnEvent {
  replica: string;
  /** When it happened, ms since the rollouts started. */
  atMs: number;
  /** The kill: the shares the victim held. The addition: the shares it was given. */
  shares: number[];
  /** Rolling apps in those shares, and of those, how many had not ended their rollout then. */
  rollingApps: number;
  midRollout: number;
  /** The kill: until every share was held by a live replica again. The addition: until the new one held one. */
  firstMs: number | undefined;
  /** Until every share was held by the replica the live replicas' assignment gives it to. */
  asAssignedMs: number | undefined;
  /** Until every app was covered again (and, after the addition, every share as assigned); undefined: not in time. */
  coveredAgainMs: number | undefined;
  /** Time not covered, by the samples (taken about every 500 ms). */
  uncoveredMs: number;
  /** The fewest apps the live replicas' shares held in any sample. */
  leastCovered: number;
}

export interface ChurnResult {
  apps: number;
  rolling: number;
  /** Every this-many-th rolling app's new image fails its check. */
  failEvery: number;
  shares: number;
  intervalSeconds: number;
  /** From the first create until every app had its VirtualService (its last child). */
  secondsToAllChildren: number;
  /** From then until every rolling app was Healthy on its first image. */
  secondsToRollingHealthy: number;
  /** Just before the kill, and at the end. */
  before: ReplicaFigures[];
  after: ReplicaFigures[];
  kill: ChurnEvent;
  /** readyMs: until the added replica's /readyz answered 200 (undefined: not by the end of the addition's wait). */
  add: ChurnEvent & { readyMs: number | undefined };
  /** From the kill until the apps were all covered after the addition, and the time they were not, in all. */
  overall: { spanMs: number | undefined; uncoveredMs: number };
  /** The most apps (shares) the live replicas said they held at once, summed: above the total, one counted twice. */
  mostAppsCounted: number;
  mostSharesCounted: number;
  rollouts: RolloutFigures;
  /** kube-apiserver's audit of the replicas' writes to the apps of both namespaces. */
  audit: Pick<WriteAudit, "writes" | "writesBy" | "apps" | "tenures" | "handovers" | "longestHandoverMs"> & {
    /** Apps written by two replicas at once, and every such pair of windows (the first few). */
    appsWrittenByTwo: number;
    overlaps: number;
    examples: string[];
    unattributed: number;
  };
  /** Shares held by two replicas at once by their own logs (test/support/app-tenures.ts). */
  shareOverlaps: string[];
  /** ms since the rollouts started, and what happened. */
  timeline: string[];
}

/** The audit as the result keeps it. */
export function auditFigures(audit: WriteAudit): ChurnResult["audit"] {
  return {
    writes: audit.writes,
    writesBy: audit.writesBy,
    apps: audit.apps,
    tenures: audit.tenures,
    handovers: audit.handovers,
    longestHandoverMs: audit.longestHandoverMs,
    appsWrittenByTwo: new Set(audit.overlaps.map((o) => o.slice(0, o.indexOf(": ")))).size,
    overlaps: audit.overlaps.length,
    examples: audit.overlaps.slice(0, MAX_EXAMPLES),
    unattributed: audit.unattributed.length,
  };
}

const seconds = (ms: number | undefined) => (ms === undefined ? "–" : (ms / 1000).toFixed(1));

function replicaLine(when: string, r: ReplicaFigures): string {
  return `churn: ${when}: ${r.identity}: ${r.shares} shares, ${r.apps} apps (${r.rollingApps} rolling), ${r.writes} writes, rss ${r.rssMiB} MiB`;
}

/** The figures as lines. */
export function formatChurn(r: ChurnResult): string[] {
  const ro = r.rollouts;
  const a = r.audit;
  return [
    `churn: ${r.apps} CanaryApps (${r.rolling} roll out, every ${r.failEvery}th image fails its check), ${r.before.length} replicas, ${r.shares} shares: all children in ${r.secondsToAllChildren.toFixed(1)} s, the rolling apps Healthy ${r.secondsToRollingHealthy.toFixed(1)} s later`,
    ...r.before.map((p) => replicaLine("before", p)),
    `churn: SIGKILL ${r.kill.replica} at ${seconds(r.kill.atMs)} s (${r.kill.shares.length} shares, ${r.kill.rollingApps} rolling apps, ${r.kill.midRollout} mid-rollout): its shares held by the others after ${seconds(r.kill.firstMs)} s, every app covered again after ${seconds(r.kill.coveredAgainMs)} s (fewest covered ${r.kill.leastCovered} of ${r.apps})`,
    `churn: ${r.add.replica} added at ${seconds(r.add.atMs)} s: Ready after ${seconds(r.add.readyMs)} s, its first share after ${seconds(r.add.firstMs)} s, every share as assigned after ${seconds(r.add.asAssignedMs)} s (${r.add.shares.length} shares, ${r.add.rollingApps} rolling apps, ${r.add.midRollout} mid-rollout), every app covered again after ${seconds(r.add.coveredAgainMs)} s (not covered for ${seconds(r.add.uncoveredMs)} s, fewest covered ${r.add.leastCovered})`,
    `churn: overall: from the kill until every app was covered after the addition ${seconds(r.overall.spanMs)} s, apps not all covered for ${seconds(r.overall.uncoveredMs)} s; most apps counted at once ${r.mostAppsCounted} of ${r.apps}, most shares ${r.mostSharesCounted} of ${r.shares}`,
    ...r.after.map((p) => replicaLine("after", p)),
    `churn: rollouts: ${ro.rolling} (${ro.passing} passing, ${ro.failing} failing): ${ro.promoted} promoted and ${ro.rolledBack} rolled back as their images call for; ended wrong: ${ro.wrong} (${ro.notEnded} not ended in ${ro.timeoutSeconds} s)${ro.examples.length > 0 ? `  e.g. ${ro.examples.join(" | ")}` : ""}`,
    `churn: rollouts: all ended ${ro.secondsToAllEnded === undefined ? "–" : ro.secondsToAllEnded.toFixed(1)} s after the first spec.image change; per app median ${ro.perAppSeconds.median.toFixed(1)} s, max ${ro.perAppSeconds.max.toFixed(1)} s`,
    `churn: apps written by two replicas at once (kube-apiserver audit): ${a.appsWrittenByTwo}${a.examples.length > 0 ? `  e.g. ${a.examples.join(" | ")}` : ""}; ${a.writes} writes to ${a.apps} apps (${Object.entries(
      a.writesBy,
    )
      .map(([who, n]) => `${who} ${n}`)
      .join(", ")}), ${a.handovers} handovers (longest ${a.longestHandoverMs} ms), ${a.unattributed} unattributed`,
    `churn: shares held by two replicas at once (their logs): ${r.shareOverlaps.length}${r.shareOverlaps.length > 0 ? `  e.g. ${r.shareOverlaps.slice(0, MAX_EXAMPLES).join(" | ")}` : ""}`,
    `churn: timeline (ms since the rollouts started): ${r.timeline.join("; ")}`,
  ];
}

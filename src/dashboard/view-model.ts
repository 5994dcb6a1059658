/**
 * The dashboard's view-model: CanaryApps and their Events in, what the page shows out (model.ts). Pure: no
 * I/O and no clock (the time of a history point is given), so that every rule is a table of cases
 * (view-model.test.ts). The step plan and the query that judged a failed image are the plugin's own
 * (src/cli/view.ts, src/cli/history.ts): the page and `kubectl canaryapp get` cannot disagree.
 */
import type { CanaryApp, CanaryAppStatus } from "../api/types.js";
import { ANNOTATIONS } from "../api/types.js";
import { judgingQuery } from "../cli/history.js";
import { phaseText, stepPlan } from "../cli/view.js";
import type {
  AnalysisPoint,
  AppDetail,
  AppSummary,
  ControlName,
  EventView,
  StepView,
  WeightPoint,
  WeightsView,
} from "./model.js";

/** The part of a core/v1 Event the dashboard keeps (src/dashboard/source.ts trims them to this). */
export interface EventLike {
  metadata?: { name?: string; namespace?: string; resourceVersion?: string; creationTimestamp?: Date | string };
  involvedObject?: { kind?: string; name?: string; namespace?: string };
  type?: string;
  reason?: string;
  message?: string;
  count?: number;
  lastTimestamp?: Date | string;
  eventTime?: Date | string;
  firstTimestamp?: Date | string;
}

/** How many Events of an app the page shows, and how many points of each history the dashboard keeps. */
export const LIMITS = { events: 20, weightPoints: 200, analysisPoints: 60 } as const;

/** `namespace/name` of an app. */
export function appKey(app: Pick<CanaryApp, "metadata">): string {
  return `${app.metadata.namespace ?? ""}/${app.metadata.name ?? ""}`;
}

function weightsView(weights: CanaryAppStatus["weights"]): WeightsView | undefined {
  if (weights === undefined) return undefined;
  return {
    primary: weights.primary,
    secondary: weights.secondary,
    ...(weights.mirror !== undefined ? { mirror: weights.mirror } : {}),
    ...(weights.match === true ? { match: true } : {}),
  };
}

/** The steps of the running test, each done, current or pending; none when no test runs or for a batch release. */
export function stepsOf(app: CanaryApp): StepView[] {
  const canary = app.status?.canary;
  if (canary === undefined || app.spec.strategy?.type === "batches") return [];
  const { weights, phases } = stepPlan(app);
  return weights.map((weight, i) => {
    const phase = phases[i];
    return {
      label: phase !== undefined ? phaseText(phase).replace(/ \(.*\)$/, "") : `${weight}%`,
      state: i < canary.step ? "done" : i === canary.step ? "current" : "pending",
    };
  });
}

/** Where the test is, in words: `step 2 of 5`, the batch summary, or the stage past the steps. */
export function progressOf(app: CanaryApp): string {
  const status = app.status;
  const canary = status?.canary;
  if (status?.batch !== undefined && (canary !== undefined || status.batch.rollback?.state === "running")) {
    return `batch ${status.batch.summary}`;
  }
  if (canary === undefined) return "";
  if (canary.stage === "WaitingForSecondary") return "waiting for the secondary";
  const count = stepPlan(app).weights.length;
  if (canary.stage === "Stepping" || canary.stage === "AwaitingPromotion") {
    const at = canary.step < 0 ? "before step 1" : `step ${Math.min(canary.step, count - 1) + 1}`;
    return `${at} of ${count}${canary.stage === "AwaitingPromotion" ? ", awaiting promotion" : ""}`;
  }
  return canary.stage === "RollingBack" ? "rolling back" : canary.stage.toLowerCase();
}

/**
 * The controls that make sense for the app now: promote and abort while a test runs, pause or resume by the
 * paused annotation, approve while a batch waits for it, retry while spec.image is a failed image. The server
 * accepts every control whatever this says, as the plugin does: the controller decides what a request means.
 */
export function availableControls(app: CanaryApp): ControlName[] {
  const status = app.status;
  const canary = status?.canary;
  const paused = app.metadata.annotations?.[ANNOTATIONS.paused] !== undefined;
  const controls: ControlName[] = [];
  if (canary !== undefined && canary.stage !== "RollingBack" && canary.stage !== "Finalising") {
    if (canary.approval !== undefined) controls.push("approve");
    controls.push("promote", "abort");
  }
  if (paused) controls.push("resume");
  else if (canary !== undefined) controls.push("pause");
  const failed = status?.failedImages?.some((f) => f.image === app.spec.image) ?? false;
  if (status?.phase === "Failed" || failed) controls.push("retry");
  return controls;
}

/** One app as the overview shows it. */
export function summarize(app: CanaryApp): AppSummary {
  const status = app.status;
  const canary = status?.canary;
  const weights = weightsView(status?.weights);
  return {
    key: appKey(app),
    namespace: app.metadata.namespace ?? "",
    name: app.metadata.name ?? "",
    phase: status?.phase ?? "Unknown",
    image: app.spec.image,
    ...(status?.primaryImage !== undefined ? { primaryImage: status.primaryImage } : {}),
    ...(canary !== undefined
      ? {
          canary: {
            image: canary.image,
            stage: canary.stage,
            paused: canary.pausedAt !== undefined,
            startedAt: canary.startedAt,
          },
        }
      : {}),
    ...(status?.message !== undefined ? { message: status.message } : {}),
    ...(weights !== undefined ? { weights } : {}),
    steps: stepsOf(app),
    progress: progressOf(app),
    controls: availableControls(app),
  };
}

function iso(time: Date | string | undefined): string | undefined {
  if (time === undefined) return undefined;
  const date = new Date(time);
  return Number.isNaN(date.getTime()) ? undefined : date.toISOString();
}

/** When an Event last happened: lastTimestamp, else eventTime, firstTimestamp, creation. */
export function eventTime(e: EventLike): string {
  return iso(e.lastTimestamp) ?? iso(e.eventTime) ?? iso(e.firstTimestamp) ?? iso(e.metadata?.creationTimestamp) ?? "";
}

/** The app's newest Events, oldest first, at most `limit`. */
export function eventViews(events: readonly EventLike[], limit: number = LIMITS.events): EventView[] {
  return events
    .map((e) => ({
      type: e.type ?? "Normal",
      reason: e.reason ?? "",
      message: e.message ?? "",
      time: eventTime(e),
      count: e.count ?? 1,
    }))
    .sort((a, b) => a.time.localeCompare(b.time))
    .slice(-limit);
}

/** Everything the app page shows. */
export function detailOf(
  app: CanaryApp,
  events: readonly EventLike[],
  history: { weights: readonly WeightPoint[]; analyses: readonly AnalysisPoint[] },
): AppDetail {
  const status = app.status;
  const canary = status?.canary;
  const last = canary?.lastAnalysis;
  return {
    ...summarize(app),
    ...(canary?.outcome !== undefined ? { outcome: { ...canary.outcome } } : {}),
    ...(last !== undefined
      ? {
          analysis: {
            time: last.time,
            verdict: last.verdict ?? (last.passed ? "Passed" : "Failed"),
            metrics: last.metrics.map((m) => ({
              name: m.name,
              passed: m.passed,
              reason: m.reason,
              ...(m.kind !== undefined ? { kind: m.kind } : {}),
              ...(m.value !== undefined ? { value: m.value } : {}),
              ...(m.min !== undefined ? { min: m.min } : {}),
              ...(m.max !== undefined ? { max: m.max } : {}),
              ...(m.rule !== undefined ? { rule: m.rule } : {}),
              ...(m.message !== undefined ? { message: m.message } : {}),
              ...(m.query !== undefined ? { query: m.query } : {}),
              ...(m.window !== undefined ? { window: m.window } : {}),
              ...(m.kind === "judge" && m.figures !== undefined ? { figures: { ...m.figures } } : {}),
            })),
          },
        }
      : {}),
    ...(canary?.gates !== undefined
      ? {
          gates: {
            passed: [...(canary.gates.passed ?? [])],
            ...(canary.gates.waiting !== undefined
              ? {
                  waiting: {
                    type: canary.gates.waiting.type,
                    name: canary.gates.waiting.name,
                    message: canary.gates.waiting.message,
                    since: canary.gates.waiting.since,
                  },
                }
              : {}),
          },
        }
      : {}),
    ...(status?.batch !== undefined
      ? {
          batch: {
            summary: status.batch.summary,
            batches: status.batch.batches.map((b) => ({ ...b })),
            ...(status.batch.rollback !== undefined ? { rollback: { ...status.batch.rollback } } : {}),
            ...(canary?.approval !== undefined ? { approval: { ...canary.approval } } : {}),
          },
        }
      : {}),
    failedImages: (status?.failedImages ?? []).map((f) => {
      const query = f.query ?? judgingQuery(app, f);
      return {
        image: f.image,
        failedAt: f.failedAt,
        reason: f.reason,
        message: f.message,
        ...(f.metric !== undefined ? { metric: f.metric } : {}),
        ...(f.value !== undefined ? { value: f.value } : {}),
        ...(query !== undefined ? { query } : {}),
      };
    }),
    conditions: (status?.conditions ?? []).map((c) => ({
      type: c.type,
      status: c.status,
      reason: c.reason,
      message: c.message,
    })),
    events: eventViews(events),
    weightHistory: [...history.weights],
    analysisHistory: [...history.analyses],
  };
}

/**
 * The weight history with the app's weights at `now` added, when they differ from the last point (a status
 * written for another reason adds nothing); at most `limit` points, the oldest dropped. No weights (no status
 * yet): unchanged.
 */
export function nextWeightHistory(
  points: readonly WeightPoint[],
  app: CanaryApp,
  now: number,
  limit: number = LIMITS.weightPoints,
): readonly WeightPoint[] {
  const weights = app.status?.weights;
  if (weights === undefined) return points;
  const last = points[points.length - 1];
  if (last !== undefined && last.primary === weights.primary && last.secondary === weights.secondary) return points;
  return [...points, { t: now, primary: weights.primary, secondary: weights.secondary }].slice(-limit);
}

/**
 * The analysis history with the app's last analysis added, when it is one not seen yet (by its time); at most
 * `limit` points.
 */
export function nextAnalysisHistory(
  points: readonly AnalysisPoint[],
  app: CanaryApp,
  limit: number = LIMITS.analysisPoints,
): readonly AnalysisPoint[] {
  const analysis = app.status?.canary?.lastAnalysis;
  if (analysis === undefined) return points;
  const t = new Date(analysis.time).getTime();
  if (Number.isNaN(t) || points.some((p) => p.t === t)) return points;
  const values: Record<string, number | null> = {};
  for (const m of analysis.metrics) values[m.name] = m.value ?? null;
  return [...points, { t, values }].sort((a, b) => a.t - b.t).slice(-limit);
}

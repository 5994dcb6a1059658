import type { ResolvedSpec } from "../api/defaults.js";
import { parseDurationSeconds } from "../api/defaults.js";
import type {
  BuiltinMetric,
  CanaryApp,
  MetricCheck,
  MetricProviderSpec,
  WebhookSpec,
  WebhookType,
} from "../api/types.js";
import type { CompareSettings } from "./comparison.js";
import { COMPARE_QUERY } from "./comparison.js";
import { JUDGE_DEFAULTS } from "./judge/metric.js";
import {
  BUILTIN_QUERIES,
  TRACK_VARIABLES,
  TRAFFIC_QUERY,
  forTrack,
  renderQuery,
  templateVars,
  unknownTemplateVariables,
  type TemplateVars,
} from "./templates.js";

/**
 * How a check's query is judged:
 * - "traffic": the evidence. The query counts the requests the secondary served in the step; fewer than
 *   `min` (or no data) leaves the analysis inconclusive, never passed.
 * - "seed": the query selects failing series (the original `prometheusQuery`); any result fails the step.
 * - "threshold": the query returns numbers (one, or one a series) that must each lie within min/max.
 * - "compare": the query returns the figures of both tracks (comparison.ts), judged secondary against primary.
 * - "webhook": `query` is the URL of a webhook (`webhook` says how to call it); it passes when it answers 2xx.
 * - "judge": one track's samples over the step (`range`, `track`), judged against the other track's (ADR 0030).
 */
export type CheckMode = "traffic" | "seed" | "threshold" | "compare" | "webhook" | "judge";

/** How a webhook check is called. */
export interface WebhookCall {
  type: WebhookType;
  timeoutSeconds: number;
  retries: number;
  metadata: Record<string, string>;
}

/** A webhook's timeout when its spec gives none. */
export const DEFAULT_WEBHOOK_TIMEOUT_SECONDS = 10;

/**
 * A check an analysis runs, and how its outcome is judged: a PromQL query template (see templates.ts; rendered
 * for one app by `renderChecks`), or a webhook (mode "webhook", its URL as `query`). A new judge adds its mode,
 * and its provider beside Prometheus's and the webhooks' (providers/by-mode.ts).
 */
export interface AnalysisCheck {
  name: string;
  mode: CheckMode;
  /** PromQL with `{{variable}}` placeholders; render it with `renderQuery` before running it. */
  query: string;
  min?: number;
  max?: number;
  /** The step's window the query was rendered with (`{{stepWindow}}`); set by `renderChecks`. */
  window?: string;
  /** For "compare": its settings. */
  compare?: CompareSettings;
  /** For "webhook": how it is called. */
  webhook?: WebhookCall;
  /** Where the query runs; the app's Prometheus when absent. */
  provider?: MetricProviderSpec;
  /**
   * For "judge": the samples to return, from `start` to `end` (RFC 3339), one every `stepSeconds`; the
   * provider answers `{ kind: "samples" }`.
   */
  range?: SampleRange;
  /** For "judge": which track this query measures. */
  track?: "primary" | "secondary";
  /** For "judge": how the two tracks' samples are judged, and the metric's place in the score. */
  judge?: JudgeSettings;
  /** The template the metric came from, `<Kind>/<name>` (ADR 0031): its results name it. */
  template?: string;
}

/** A judged metric's settings, defaults filled (ADR 0030). */
export interface JudgeSettings {
  direction: "increase" | "decrease" | "either";
  effectTolerance: number;
  minSamples: number;
  confidence: number;
  weight: number;
  critical: boolean;
  mustHaveData: boolean;
  /** The spacing of the samples, in seconds. */
  intervalSeconds: number;
  /** The score the analysis' judged metrics must reach. */
  score: { pass: number; marginal: number };
  /** Which look at the test this analysis is: its step (1-based) of the planned steps; set when rendered. */
  look?: { index: number; planned: number };
}

/** The spacing of a judged metric's samples when it gives none. */
export const JUDGE_SAMPLE_INTERVAL = "10s";

/** The span and spacing of a judged metric's samples. */
export interface SampleRange {
  start: string;
  end: string;
  stepSeconds: number;
}

/** The name under which the evidence of traffic appears in status and events. */
export const TRAFFIC_CHECK_NAME = "secondary-traffic";

/** The name under which the comparison with the primary appears in status and events. */
export const COMPARE_CHECK_NAME = "compare-with-primary";

/** The name under which the seed-compatible `spec.prometheusQuery` appears in status and events. */
export const SEED_CHECK_NAME = "prometheusQuery";

/** The check used when a spec names none: at least 99 % of the secondary's requests succeed. */
export const DEFAULT_SUCCESS_RATE_MIN = 99;

function isBuiltin(name: string): name is BuiltinMetric {
  return name in BUILTIN_QUERIES;
}

/**
 * Whether a query selects Istio's `destination_service` or `destination_service_name` equal to a Service
 * other than the secondary's. The route sends the secondary's share to `<name>-secondary`, and Istio reports
 * a request against the Service it was routed to or one that selects the receiving pod, never against the
 * app's Service `<name>` (docs/istio-telemetry.md, ADR 0023): such a query never sees the version under test.
 */
export function blindToSecondary(query: string): boolean {
  for (const match of query.matchAll(/\bdestination_service(?:_name)?\s*=\s*"([^"]*)"/g)) {
    if (!/\{\{\s*secondary\s*\}\}|-secondary(\.|$)/.test(match[1] ?? "")) return true;
  }
  return false;
}

/**
 * The checks of one analysis, in the order the results must come back: the evidence of traffic first
 * (unless `analysis.requireTraffic` is false), then the seed query (if set), the comparison with the primary
 * (if asked for), then each metric. A built-in
 * metric takes its query from the templates unless it gives its own. A spec without any check still gets
 * the success rate, so that no image is ever promoted unmeasured; so does a spec whose every check is blind
 * to the secondary (`blindToSecondary`: the seed manifest's own query is).
 */
export function analysisChecks(spec: ResolvedSpec): AnalysisCheck[] {
  const checks: AnalysisCheck[] = [];
  if (spec.analysis.requireTraffic) {
    checks.push({
      name: TRAFFIC_CHECK_NAME,
      mode: "traffic",
      query: spec.analysis.trafficQuery ?? TRAFFIC_QUERY,
      min: spec.analysis.minRequests,
    });
  }
  if (spec.prometheusQuery !== undefined && spec.prometheusQuery.trim() !== "") {
    checks.push({ name: SEED_CHECK_NAME, mode: "seed", query: spec.prometheusQuery });
  }
  if (spec.analysis.compare !== undefined) {
    checks.push({ name: COMPARE_CHECK_NAME, mode: "compare", query: COMPARE_QUERY, compare: compareSettings(spec) });
  }
  for (const metric of spec.analysis.metrics) {
    const query = metric.query ?? (isBuiltin(metric.name) ? BUILTIN_QUERIES[metric.name] : undefined);
    // The schema requires a query for custom metrics; a metric that slipped through is reported by
    // checkProblems and never run.
    if (query === undefined) continue;
    if (metric.judge !== undefined) {
      checks.push(...judgedChecks(spec, metric, query));
      continue;
    }
    checks.push({
      ...(metric.provider !== undefined ? { provider: metric.provider } : {}),
      name: metric.name,
      mode: "threshold",
      query,
      ...(metric.min !== undefined ? { min: metric.min } : {}),
      ...(metric.max !== undefined ? { max: metric.max } : {}),
      ...(metric.template !== undefined ? { template: metric.template } : {}),
    });
  }
  checks.push(...webhookChecks(spec, "rollout"));
  // A check that cannot see the secondary's requests judges nothing of the new version.
  const judged = checks.some(
    (check) => check.mode !== "traffic" && check.mode !== "webhook" && !blindToSecondary(check.query),
  );
  const taken = checks.some((check) => check.name === "request-success-rate");
  if (!judged && !taken) {
    checks.push({
      name: "request-success-rate",
      mode: "threshold",
      query: BUILTIN_QUERIES["request-success-rate"],
      min: DEFAULT_SUCCESS_RATE_MIN,
    });
  }
  return checks;
}

/**
 * A judged metric as two checks, the primary's query then the secondary's (the same template, `{{track}}`,
 * `{{workload}}` and `{{revision}}` naming the track), judged together (judged.ts).
 */
function judgedChecks(spec: ResolvedSpec, metric: MetricCheck, query: string): AnalysisCheck[] {
  const judge = metric.judge ?? {};
  const settings: JudgeSettings = {
    direction: judge.direction ?? JUDGE_DEFAULTS.direction,
    effectTolerance: judge.effectTolerance ?? JUDGE_DEFAULTS.effectTolerance,
    minSamples: judge.minSamples ?? JUDGE_DEFAULTS.minSamples,
    confidence: judge.confidence ?? JUDGE_DEFAULTS.confidence,
    weight: metric.weight ?? 1,
    critical: metric.critical ?? false,
    mustHaveData: metric.mustHaveData ?? true,
    // An unreadable interval is reported by checkProblems; the default stands in until then.
    intervalSeconds: parseDurationSeconds(
      metric.interval !== undefined && isDuration(metric.interval) ? metric.interval : JUDGE_SAMPLE_INTERVAL,
    ),
    score: spec.analysis.score,
  };
  return (["primary", "secondary"] as const).map((track) => ({
    name: metric.name,
    mode: "judge",
    query,
    track,
    judge: settings,
    ...(metric.provider !== undefined ? { provider: metric.provider } : {}),
    ...(metric.template !== undefined ? { template: metric.template } : {}),
  }));
}

/**
 * The comparison's settings: the spec's, and the absolute bound of the secondary's p99 for when the primary
 * has none to compare with, which is the built-in `request-duration` check's `max` (the secondary's p99 in
 * ms) when the spec sets one on the built-in query.
 */
function compareSettings(spec: ResolvedSpec): CompareSettings | undefined {
  const compare = spec.analysis.compare;
  if (compare === undefined) return undefined;
  const duration = spec.analysis.metrics.find((m) => m.name === "request-duration" && m.query === undefined);
  return duration?.max !== undefined ? { ...compare, latencyMaxMs: duration.max } : compare;
}

/** The spec's webhooks of one type as checks, in the spec's order. */
export function webhookChecks(spec: ResolvedSpec, type: WebhookType): AnalysisCheck[] {
  return spec.analysis.webhooks.filter((w) => w.type === type).map(webhookCheck);
}

function webhookCheck(webhook: WebhookSpec): AnalysisCheck {
  return {
    name: webhook.name,
    mode: "webhook",
    query: webhook.url,
    webhook: {
      type: webhook.type,
      timeoutSeconds: webhook.timeoutSeconds ?? DEFAULT_WEBHOOK_TIMEOUT_SECONDS,
      retries: webhook.retries ?? 0,
      metadata: webhook.metadata ?? {},
    },
  };
}

/** The checks of one gate (its webhooks), rendered for this app like the analysis' checks. */
export function renderGateChecks(
  app: CanaryApp,
  spec: ResolvedSpec,
  type: WebhookType,
  now?: Date,
  revisions?: Record<"primary" | "secondary", string>,
): AnalysisCheck[] {
  const vars = templateVars(app, spec, now, revisions);
  return webhookChecks(spec, type).map((check) => ({ ...check, query: renderQuery(check.query, vars) }));
}

/**
 * What makes the analysis of a spec impossible to run, as sentences (empty when it can run). The schema
 * catches most mistakes; these are the ones it cannot see, such as an unknown `{{variable}}`.
 */
export function checkProblems(spec: ResolvedSpec): string[] {
  const problems: string[] = [];
  for (const metric of spec.analysis.metrics) {
    if (metric.query === undefined && !isBuiltin(metric.name)) {
      problems.push(`metric ${metric.name} needs a query (it is not a built-in metric)`);
    }
    if (metric.judge === undefined && metric.min === undefined && metric.max === undefined) {
      problems.push(`metric ${metric.name} needs min, max or both, or a judge`);
    }
    if (metric.judge !== undefined && (metric.min !== undefined || metric.max !== undefined)) {
      problems.push(`metric ${metric.name} has both a judge and min/max: it is judged one way`);
    }
    const named = metric.query ?? "";
    if (
      metric.judge !== undefined &&
      !TRACK_VARIABLES.some((v) => new RegExp(`\\{\\{\\s*${v}\\s*\\}\\}`).test(named))
    ) {
      problems.push(
        `the query of judged metric ${metric.name} names no track ({{track}}, {{workload}} or {{revision}}): it would measure the same thing twice`,
      );
    }
    problems.push(...judgeProblems(metric));
    if (metric.interval !== undefined && !isDuration(metric.interval)) {
      problems.push(`metric ${metric.name} has an invalid interval "${metric.interval}": use forms like 10s, 1m`);
    }
  }
  const { pass, marginal } = spec.analysis.score;
  if (!(marginal >= 0 && marginal <= pass && pass <= 100)) {
    problems.push(`analysis.score needs 0 ≤ marginal ≤ pass ≤ 100 (marginal ${marginal}, pass ${pass})`);
  }
  for (const check of [...analysisChecks(spec), ...spec.analysis.webhooks.map(webhookCheck)]) {
    const unknown = unknownTemplateVariables(check.query);
    if (unknown.length > 0) {
      const names = unknown.map((name) => `{{${name}}}`).join(", ");
      problems.push(`the query of ${check.name} uses unknown template variable ${names}`);
    }
  }
  return problems;
}

/**
 * The checks of one analysis, rendered for this app at `now`, in the order the results must come back.
 * Throws an InvalidSpecError (TemplateError) when a template names an unknown variable.
 */
export function renderChecks(
  app: CanaryApp,
  spec: ResolvedSpec,
  now?: Date,
  revisions?: Record<"primary" | "secondary", string>,
): AnalysisCheck[] {
  const vars = templateVars(app, spec, now, revisions);
  return analysisChecks(spec).map((check) => {
    if (check.mode === "judge") return renderJudged(check, vars, app, spec, now);
    const window = /\{\{\s*stepWindow\s*\}\}/.test(check.query)
      ? vars.stepWindow
      : /\{\{\s*interval\s*\}\}/.test(check.query)
        ? vars.interval
        : undefined;
    return { ...check, query: renderQuery(check.query, vars), ...(window !== undefined ? { window } : {}) };
  });
}

/**
 * A judged check rendered for its track: the samples span the step (from `{{stepStart}}` to now), one every
 * metric interval; the look is the step's place among the test's planned steps (ADR 0030).
 */
function renderJudged(
  check: AnalysisCheck,
  vars: TemplateVars,
  app: CanaryApp,
  spec: ResolvedSpec,
  now: Date | undefined,
): AnalysisCheck {
  const track = check.track ?? "secondary";
  const settings = check.judge;
  const startMs = Number(vars.stepStart) * 1000;
  // Whole seconds, as the step's window: a run is known by its rendered checks (analysisStep), so they must not
  // change between the reconcile that starts it and the one that collects it a moment later.
  const endMs = Math.floor((now?.getTime() ?? startMs + spec.analysis.intervalSeconds * 1000) / 1000) * 1000;
  const planned = Math.max(1, spec.analysis.weights.length);
  const step = app.status?.canary?.step ?? 0;
  return {
    ...check,
    query: renderQuery(check.query, forTrack(vars, track)),
    window: vars.stepWindow,
    range: {
      start: new Date(startMs).toISOString(),
      end: new Date(Math.max(endMs, startMs)).toISOString(),
      stepSeconds: settings?.intervalSeconds ?? parseDurationSeconds(JUDGE_SAMPLE_INTERVAL),
    },
    ...(settings !== undefined
      ? { judge: { ...settings, look: { index: Math.min(planned, Math.max(1, step + 1)), planned } } }
      : {}),
  };
}

function isDuration(text: string): boolean {
  try {
    return parseDurationSeconds(text) > 0;
  } catch {
    return false;
  }
}

/** What makes a judged metric's settings unusable (the schema catches these too, this says it on the object). */
function judgeProblems(metric: MetricCheck): string[] {
  const judge = metric.judge;
  if (judge === undefined) return [];
  const problems: string[] = [];
  const { confidence, effectTolerance, minSamples } = judge;
  if (confidence !== undefined && !(confidence > 0.5 && confidence < 1)) {
    problems.push(`metric ${metric.name}: judge.confidence must be above 0.5 and below 1 (${confidence})`);
  }
  if (effectTolerance !== undefined && !(effectTolerance >= 0 && Number.isFinite(effectTolerance))) {
    problems.push(`metric ${metric.name}: judge.effectTolerance must be 0 or more (${effectTolerance})`);
  }
  if (minSamples !== undefined && !(Number.isInteger(minSamples) && minSamples >= 1)) {
    problems.push(`metric ${metric.name}: judge.minSamples must be a whole number from 1 (${minSamples})`);
  }
  if (metric.weight !== undefined && !(metric.weight >= 0 && Number.isFinite(metric.weight))) {
    problems.push(`metric ${metric.name}: weight must be 0 or more (${metric.weight})`);
  }
  return problems;
}

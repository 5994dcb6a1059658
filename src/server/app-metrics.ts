import type { MetricResult, Phase } from "../api/types.js";

/** Every phase, so that `canaryapp_phase` can show 1 for the current one and 0 for the others. */
export const PHASES = [
  "Initializing",
  "Healthy",
  "Progressing",
  "Paused",
  "Promoting",
  "RollingBack",
  "Failed",
  "Invalid",
] as const satisfies readonly Phase[];

// Fails to compile when a phase is added to the API but not to PHASES.
type MissingPhase = Exclude<Phase, (typeof PHASES)[number]>;
const _allPhasesListed: MissingPhase extends never ? true : MissingPhase = true;
void _allPhasesListed;

/** The buckets of `canaryapp_step_duration_seconds`, in seconds. */
export const STEP_BUCKETS: readonly number[] = [1, 2, 5, 10, 30, 60, 120, 300, 600, 1800, 3600];

/** The app's gauges that follow its status (status.phase, status.weights, the current test's failed checks). */
export interface AppState {
  phase?: Phase;
  /** status.weights.secondary. */
  secondaryWeight?: number;
  /** status.weights.mirror: the share of live traffic copied to the secondary in the mirror phase (ADR 0027). */
  secondaryMirrorPercent?: number;
  /** status.weights.match: the requests matching spec.analysis.match go to the secondary (the A/B phase). */
  secondaryMatched?: boolean;
  failedChecks?: number;
}

/** One app's series. Label texts are escaped once, when a series is made, and only joined at a scrape. */
interface AppRecord {
  /** `namespace="…",name="…"`. */
  readonly labels: string;
  phase?: Phase;
  secondaryWeight?: number;
  /** The mirror phase's share copied to the secondary; 0 outside it. */
  secondaryMirrorPercent?: number;
  /** 1 in the A/B phase (the matching requests go to the secondary), else 0. */
  secondaryMatched?: number;
  failedChecks?: number;
  /** By `,reason="…"`. */
  readonly transitions: Map<string, number>;
  /** By `,result="…"`. */
  readonly analyses: Map<string, number>;
  /** By `,check="…"`. */
  readonly checks: Map<string, { value?: number; min?: number; max?: number }>;
  /** Observations per bucket of STEP_BUCKETS, not cumulative; the last counts those above every bucket. */
  steps?: { counts: number[]; sum: number; count: number };
  failedImageCount?: number;
  /** `,image="…",reason="…"` of each image shown. */
  failedImages: ReadonlySet<string>;
}

/**
 * The series that belong to one CanaryApp each (phase, weight, mirror share and A/B phase, checks, transitions, step
 * durations, failed images), kept as plain numbers per app and written out as exposition text at a scrape (ADR 0020).
 *
 * These are most of the controller's series (33 an app once it has rolled out: 165,000 at 5,000 apps). Kept as
 * prom-client series they took 22 MiB of heap at 5,000 apps and 1.7 s of CPU a scrape under the controller's V8
 * flags; prom-client keeps a labels object and a key string per series, and escapes every label of every series at
 * every scrape. Here an app's labels are escaped once and a scrape only joins strings.
 */
export class AppMetrics {
  private readonly apps = new Map<string, AppRecord>();

  /** Sets the app's gauges; absent fields are left as they are. */
  setState(namespace: string, name: string, state: AppState): void {
    const app = this.app(namespace, name);
    if (state.phase !== undefined) app.phase = state.phase;
    if (state.secondaryWeight !== undefined) app.secondaryWeight = state.secondaryWeight;
    if (state.secondaryMirrorPercent !== undefined) app.secondaryMirrorPercent = state.secondaryMirrorPercent;
    if (state.secondaryMatched !== undefined) app.secondaryMatched = state.secondaryMatched ? 1 : 0;
    if (state.failedChecks !== undefined) app.failedChecks = state.failedChecks;
  }

  countTransition(namespace: string, name: string, reason: string): void {
    increment(this.app(namespace, name).transitions, label("reason", reason));
  }

  countAnalysis(namespace: string, name: string, result: string): void {
    increment(this.app(namespace, name).analyses, label("result", result));
  }

  /** The values of one analysis' checks (a value that is not a finite number is dropped), and their thresholds. */
  setAnalysis(namespace: string, name: string, results: readonly MetricResult[]): void {
    const checks = this.app(namespace, name).checks;
    for (const r of results) {
      const key = label("check", r.name);
      const check = checks.get(key) ?? {};
      if (r.value !== undefined && Number.isFinite(r.value)) check.value = r.value;
      else delete check.value;
      if (r.min !== undefined) check.min = r.min;
      if (r.max !== undefined) check.max = r.max;
      checks.set(key, check);
    }
  }

  /** A traffic step of the app lasted `seconds`. */
  observeStep(namespace: string, name: string, seconds: number): void {
    const app = this.app(namespace, name);
    app.steps ??= { counts: new Array<number>(STEP_BUCKETS.length + 1).fill(0), sum: 0, count: 0 };
    const bucket = STEP_BUCKETS.findIndex((le) => seconds <= le);
    const index = bucket === -1 ? STEP_BUCKETS.length : bucket;
    app.steps.counts[index] = (app.steps.counts[index] ?? 0) + 1;
    app.steps.sum += seconds;
    app.steps.count += 1;
  }

  /** The app's failed images as its status records them: the count, and one series an image. */
  setFailedImages(namespace: string, name: string, failed: readonly { image: string; reason: string }[]): void {
    const app = this.app(namespace, name);
    app.failedImageCount = failed.length;
    app.failedImages = new Set(failed.map((f) => `${label("image", f.image)}${label("reason", f.reason)}`));
  }

  /** Drops every series of the app. */
  remove(namespace: string, name: string): void {
    this.apps.delete(`${namespace}/${name}`);
  }

  /** The exposition text (Prometheus text format 0.0.4) of every family, each with its HELP and TYPE. */
  render(): string {
    const apps = [...this.apps.values()];
    let text = "";
    for (const f of FAMILIES) {
      text += `# HELP ${f.name} ${f.help}\n# TYPE ${f.name} ${f.type}\n`;
      for (const app of apps) text += f.lines(f.name, app);
      text += "\n";
    }
    return text;
  }

  private app(namespace: string, name: string): AppRecord {
    const key = `${namespace}/${name}`;
    let app = this.apps.get(key);
    if (app === undefined) {
      app = {
        labels: `namespace="${escapeLabel(namespace)}",name="${escapeLabel(name)}"`,
        transitions: new Map(),
        analyses: new Map(),
        checks: new Map(),
        failedImages: new Set(),
      };
      this.apps.set(key, app);
    }
    return app;
  }
}

/** One family of per-app series: its samples for one app, by the family's name. */
interface Family {
  name: string;
  type: "gauge" | "counter" | "histogram";
  help: string;
  lines: (name: string, app: AppRecord) => string;
}

/** `,phase="…"` of each of PHASES, escaped once. */
const PHASE_LABELS = PHASES.map((phase) => label("phase", phase));

/** The families, in the order a scrape shows them. */
const FAMILIES: readonly Family[] = [
  {
    name: "canaryapp_phase",
    type: "gauge",
    help: "1 for the CanaryApp's current phase, 0 for the others.",
    lines: (name, a) => {
      if (a.phase === undefined) return "";
      let lines = "";
      PHASES.forEach((phase, i) => (lines += sample(name, a.labels, PHASE_LABELS[i] ?? "", a.phase === phase ? 1 : 0)));
      return lines;
    },
  },
  {
    name: "canaryapp_secondary_weight",
    type: "gauge",
    help: "Percentage of traffic routed to the secondary (the version under test).",
    lines: (name, a) => sample(name, a.labels, "", a.secondaryWeight),
  },
  {
    name: "canaryapp_secondary_mirror_percent",
    type: "gauge",
    help: "Percentage of live traffic mirrored to the secondary in the mirror phase (its answers discarded); 0 outside it.",
    lines: (name, a) => sample(name, a.labels, "", a.secondaryMirrorPercent),
  },
  {
    name: "canaryapp_secondary_matched",
    type: "gauge",
    help: "1 in the A/B phase, while the requests matching spec.analysis.match go to the secondary; 0 otherwise.",
    lines: (name, a) => sample(name, a.labels, "", a.secondaryMatched),
  },
  {
    name: "canaryapp_failed_checks",
    type: "gauge",
    help: "Failed analysis checks counted in the current test.",
    lines: (name, a) => sample(name, a.labels, "", a.failedChecks),
  },
  {
    name: "canaryapp_transitions_total",
    type: "counter",
    help: "Rollout transitions (test started, step advanced, promoted, rolled back...), by reason.",
    lines: (name, a) => samples(name, a.labels, a.transitions, (n) => n),
  },
  {
    name: "canaryapp_analysis_total",
    type: "counter",
    help: "Analyses run, by result.",
    lines: (name, a) => samples(name, a.labels, a.analyses, (n) => n),
  },
  {
    name: "canaryapp_analysis_value",
    type: "gauge",
    help: "The value each check of the last analysis measured (a webhook's: the HTTP status it answered).",
    lines: (name, a) => samples(name, a.labels, a.checks, (c) => c.value),
  },
  {
    name: "canaryapp_analysis_threshold_min",
    type: "gauge",
    help: "The lowest value each check passes with (its min), for checks that have one.",
    lines: (name, a) => samples(name, a.labels, a.checks, (c) => c.min),
  },
  {
    name: "canaryapp_analysis_threshold_max",
    type: "gauge",
    help: "The highest value each check passes with (its max), for checks that have one.",
    lines: (name, a) => samples(name, a.labels, a.checks, (c) => c.max),
  },
  {
    name: "canaryapp_step_duration_seconds",
    type: "histogram",
    help: "How long each traffic step lasted, from its weight applied to the next step, promotion or rollback.",
    lines: (name, a) => histogram(name, a.labels, a.steps),
  },
  {
    name: "canaryapp_failed_images",
    type: "gauge",
    help: "Images recorded as failed in the CanaryApp's status (status.failedImages).",
    lines: (name, a) => sample(name, a.labels, "", a.failedImageCount),
  },
  {
    name: "canaryapp_failed_image_info",
    type: "gauge",
    help: "1 for each image recorded as failed, with the reason it failed.",
    lines: (name, a) => {
      let lines = "";
      for (const labels of a.failedImages) lines += sample(name, a.labels, labels, 1);
      return lines;
    },
  },
];

function sample(name: string, labels: string, more: string, value: number | undefined): string {
  return value === undefined ? "" : `${name}{${labels}${more}} ${formatValue(value)}\n`;
}

function samples<T>(
  name: string,
  labels: string,
  series: ReadonlyMap<string, T>,
  value: (t: T) => number | undefined,
): string {
  let lines = "";
  for (const [more, t] of series) lines += sample(name, labels, more, value(t));
  return lines;
}

function histogram(name: string, labels: string, steps: AppRecord["steps"]): string {
  if (steps === undefined) return "";
  let lines = "";
  let cumulative = 0;
  STEP_BUCKETS.forEach((le, i) => {
    cumulative += steps.counts[i] ?? 0;
    lines += `${name}_bucket{${labels},le="${le}"} ${cumulative}\n`;
  });
  lines += `${name}_bucket{${labels},le="+Inf"} ${steps.count}\n`;
  return `${lines}${name}_sum{${labels}} ${formatValue(steps.sum)}\n${name}_count{${labels}} ${steps.count}\n`;
}

function increment(counts: Map<string, number>, key: string): void {
  counts.set(key, (counts.get(key) ?? 0) + 1);
}

/** `,key="value"`, the value escaped. */
function label(key: string, value: string): string {
  return `,${key}="${escapeLabel(value)}"`;
}

/** A label value as the text format wants it: backslash, double quote and line feed escaped. */
export function escapeLabel(value: string): string {
  return value.replace(/[\\"\n]/g, (c) => (c === "\n" ? "\\n" : `\\${c}`));
}

/** A sample value as the text format spells it. */
export function formatValue(value: number): string {
  if (Number.isNaN(value)) return "NaN";
  if (value === Infinity) return "+Inf";
  if (value === -Infinity) return "-Inf";
  return String(value);
}

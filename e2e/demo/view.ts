/**
 * The demo on a terminal: one line per change, with the time since the start, the phase, the weights as a
 * small bar, the pods, the last analysis, and the CanaryApp's Events as they arrive; every few seconds the
 * requests the simulator sent to each subset. The formatting is pure, so it is tested without a terminal.
 */
import type { CanaryApp, MetricResult, Track } from "../../src/api/types.js";
import type { AppState, Destination, SentCounts, SimulatorState } from "../sim/ledger.js";
import type { AppEvent, Change, RouteWeights, StoryRecorder, WorkloadState } from "./recorder.js";
import { tagOf } from "./story.js";

/** ANSI styles, or none (NO_COLOR, not a terminal). */
export interface Style {
  dim: (s: string) => string;
  bold: (s: string) => string;
  primary: (s: string) => string;
  secondary: (s: string) => string;
  good: (s: string) => string;
  bad: (s: string) => string;
  warn: (s: string) => string;
}

const sgr = (code: string) => (s: string) => `\u001b[${code}m${s}\u001b[0m`;
export const COLOR: Style = {
  dim: sgr("2"),
  bold: sgr("1"),
  primary: sgr("34"),
  secondary: sgr("33"),
  good: sgr("32"),
  bad: sgr("31"),
  warn: sgr("33"),
};
const same = (s: string) => s;
export const PLAIN: Style = {
  dim: same,
  bold: same,
  primary: same,
  secondary: same,
  good: same,
  bad: same,
  warn: same,
};

/** Colour when writing to a terminal and NO_COLOR is not set (https://no-color.org). */
export function styleFor(stream: { isTTY?: boolean }, env: NodeJS.ProcessEnv = process.env): Style {
  return stream.isTTY === true && (env["NO_COLOR"] ?? "") === "" ? COLOR : PLAIN;
}

/** Seconds since the start, right-aligned: "   5.2s", " 102.0s". */
export function elapsed(ms: number): string {
  return `${(ms / 1000).toFixed(1)}s`.padStart(7);
}

/** "1m52s", "38s". */
export function duration(ms: number): string {
  const seconds = Math.round(ms / 1000);
  return seconds >= 60 ? `${Math.floor(seconds / 60)}m${String(seconds % 60).padStart(2, "0")}s` : `${seconds}s`;
}

export const BAR_CELLS = 20;

/**
 * The split as a bar of 20 cells, the primary's share as "█", the secondary's as "▒" (each cell is 5 %;
 * a non-zero share shows at least one cell), followed by the numbers: "██████████████████▒▒ 90/10".
 */
export function weightBar(weights: RouteWeights | null, style: Style = PLAIN): string {
  if (weights === null) return `${style.dim("·".repeat(BAR_CELLS))} no route`;
  const total = weights.primary + weights.secondary;
  let secondary = total === 0 ? 0 : Math.round((weights.secondary / total) * BAR_CELLS);
  if (weights.secondary > 0) secondary = Math.max(1, secondary);
  if (weights.primary > 0) secondary = Math.min(BAR_CELLS - 1, secondary);
  const bar = style.primary("█".repeat(BAR_CELLS - secondary)) + style.secondary("▒".repeat(secondary));
  return `${bar} ${String(weights.primary).padStart(3)}/${String(weights.secondary).padEnd(3)}`;
}

/** What the test is doing, in a few words: "step 2/5", "waiting for pods", "" when no test runs. */
export function stageText(app: CanaryApp | undefined, steps: number): string {
  const canary = app?.status?.canary;
  if (canary === undefined) return "";
  switch (canary.stage) {
    case "WaitingForSecondary":
      return "starting secondary";
    case "Stepping":
      return `step ${canary.step + 1}/${steps}`;
    case "AwaitingPromotion":
      return "awaiting promote";
    case "Promoting":
      return "rolling out primary";
    case "Finalising":
      return "finalising";
    case "RollingBack":
      return "rolling back";
  }
}

/** "primary v1 2/2 · secondary v2 1/1" (tags only; a missing Deployment is left out). */
export function podsText(workloads: Record<Track, WorkloadState | null>, style: Style = PLAIN): string {
  const part = (track: Track, paint: (s: string) => string) => {
    const w = workloads[track];
    return w === null ? undefined : `${paint(track)} ${tagOf(w.image)} ${w.available}/${w.replicas}`;
  };
  return [part("primary", style.primary), part("secondary", style.secondary)]
    .filter((p) => p !== undefined)
    .join(" · ");
}

/** Reasons that are no verdict (too little evidence), shown as "…" rather than a failure. */
const NO_VERDICT = ["NoTraffic", "TooFewRequests", "TooFewSamples", "LatencyUnmeasured"];

/**
 * One analysis result: "prometheusQuery ✔ no failing series", "prometheusQuery ✘ 7.5",
 * "secondary-traffic … 12 requests (too few)".
 */
export function analysisText(results: readonly MetricResult[] | undefined, style: Style = PLAIN): string {
  if (results === undefined || results.length === 0) return "";
  return results
    .map((r) => {
      if (NO_VERDICT.includes(r.reason)) {
        const seen = r.value !== undefined ? `${formatValue(r.value)} requests` : "no data";
        return `${r.name} … ${seen} (too few)`;
      }
      const mark = r.passed ? style.good("✔") : style.bad("✘");
      const value =
        r.value !== undefined
          ? `${formatValue(r.value)}${r.kind === "traffic" ? " requests" : ""}`
          : r.reason === "NoFailingSeries"
            ? "no failing series"
            : r.reason;
      return `${r.name} ${mark} ${value}`;
    })
    .join(", ");
}

function formatValue(value: number): string {
  return Number.isInteger(value) ? String(value) : value.toFixed(2).replace(/\.?0+$/, "");
}

/** The state line: phase, test stage, weights, pods, last analysis. */
export function stateLine(
  view: {
    app: CanaryApp | undefined;
    weights: RouteWeights | null;
    workloads: Record<Track, WorkloadState | null>;
    steps: number;
  },
  style: Style = PLAIN,
): string {
  const phase = view.app?.status?.phase ?? "(no status)";
  const paintPhase = phase === "Failed" ? style.bad : phase === "Healthy" ? style.good : style.bold;
  const analysis = analysisText(view.app?.status?.canary?.lastAnalysis?.metrics, style);
  return [
    paintPhase(phase.padEnd(12)),
    stageText(view.app, view.steps).padEnd(19),
    weightBar(view.weights, style),
    podsText(view.workloads, style),
    analysis === "" ? "" : `${style.dim("analysis")} ${analysis}`,
  ]
    .filter((part) => part !== "")
    .join("  ");
}

/** An Event line: "event  Normal StepAdvanced: shifted 20% ..." (repeats show their count). */
export function eventLine(event: AppEvent, style: Style = PLAIN): string {
  // The controller's record of its own writes to children is background; decisions stand out.
  const housekeeping = ["Created", "Updated", "Deleted"].includes(event.reason);
  const paint = event.type === "Warning" ? style.warn : housekeeping ? style.dim : style.good;
  const repeat = event.count > 1 ? style.dim(` (×${event.count})`) : "";
  return `${style.dim("event")}  ${paint(event.reason)}: ${event.message}${repeat}`;
}

/** Requests sent to each subset since the previous counts: "primary 180 ok · secondary 20 (500×20)". */
export function trafficText(now: AppState["sent"], before: AppState["sent"] | undefined, style: Style = PLAIN): string {
  const parts: string[] = [];
  for (const dest of ["primary", "secondary", "unrouted"] as const satisfies readonly Destination[]) {
    const delta = subtract(now[dest], before?.[dest]);
    if (delta.total === 0 && dest !== "primary") continue;
    const codes = Object.entries(delta.byCode)
      .filter(([, n]) => n > 0)
      .sort(([a], [b]) => a.localeCompare(b));
    const allOk = codes.every(([code]) => code === "200");
    const detail = allOk ? "ok" : `(${codes.map(([code, n]) => `${code}×${n}`).join(", ")})`;
    const paint = dest === "primary" ? style.primary : dest === "secondary" ? style.secondary : style.dim;
    parts.push(`${paint(dest)} ${delta.total} ${allOk ? style.good(detail) : style.bad(detail)}`);
  }
  return parts.join(" · ");
}

function subtract(now: SentCounts, before: SentCounts | undefined): SentCounts {
  const byCode: Record<string, number> = {};
  for (const [code, n] of Object.entries(now.byCode)) byCode[code] = n - (before?.byCode[code] ?? 0);
  return { total: now.total - (before?.total ?? 0), byCode };
}

export interface LiveViewOptions {
  recorder: StoryRecorder;
  /** What the simulator has sent so far. */
  traffic: () => SimulatorState;
  /** The time elapsed figures count from. */
  startedAt: number;
  steps: number;
  write: (line: string) => void;
  style: Style;
  /** Time between two traffic lines (default 10 s). */
  trafficEveryMs?: number;
}

/** Prints the recorder's changes as they arrive, and the simulator's traffic every few seconds. */
export class LiveView {
  private lastState = "";
  private lastSent: AppState["sent"] | undefined;
  private lastTrafficAt: number;
  private readonly unsubscribe: () => void;
  private readonly timer: NodeJS.Timeout;

  constructor(private readonly opts: LiveViewOptions) {
    this.lastTrafficAt = Date.now();
    this.unsubscribe = opts.recorder.subscribe((change) => this.onChange(change));
    this.timer = setInterval(() => this.traffic(false), opts.trafficEveryMs ?? 10_000);
    this.timer.unref();
  }

  /** A line with the elapsed time. */
  line(text: string, at = Date.now()): void {
    this.opts.write(`${this.opts.style.dim(elapsed(at - this.opts.startedAt))}  ${text}`);
  }

  /** Prints the traffic since the last traffic line (`force`: even when nothing was sent). */
  traffic(force: boolean): void {
    const { recorder } = this.opts;
    const app = this.opts.traffic().apps.find((a) => a.namespace === recorder.namespace && a.name === recorder.name);
    if (app === undefined) return;
    const now = Date.now();
    const seconds = Math.round((now - this.lastTrafficAt) / 1000);
    const text = trafficText(app.sent, this.lastSent, this.opts.style);
    this.lastSent = structuredClone(app.sent);
    this.lastTrafficAt = now;
    if (!force && seconds === 0) return;
    this.line(`${this.opts.style.dim(`traffic, last ${seconds}s:`)} ${text}`, now);
  }

  stop(): void {
    this.unsubscribe();
    clearInterval(this.timer);
  }

  private onChange(change: Change): void {
    if (change.kind === "event") {
      this.line(eventLine(change.event, this.opts.style), change.at);
      return;
    }
    const { recorder } = this.opts;
    const state = stateLine(
      {
        app: recorder.app(),
        weights: recorder.weights(),
        workloads: { primary: recorder.workload("primary"), secondary: recorder.workload("secondary") },
        steps: this.opts.steps,
      },
      this.opts.style,
    );
    // Changes that leave the line as it was (a resourceVersion, a condition's time) are not news.
    if (state === this.lastState) return;
    this.lastState = state;
    this.line(state, change.at);
  }
}

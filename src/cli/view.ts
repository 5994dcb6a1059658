import type { V1Deployment, V1Pod, CoreV1Event } from "@kubernetes/client-node";
import { weightSequence, withDefaults, type PhaseStep } from "../api/defaults.js";
import type { BatchStatus, CanaryApp, CanaryAppStatus, MetricResult, Track, WorkloadStatus } from "../api/types.js";
import { LABELS } from "../api/types.js";
import { httpRouteAcceptance, readHTTPRouteWeights } from "../router/gateway-api.js";
import { CANARY_ROUTE, destinationTrack, readIstioWeights } from "../router/istio.js";
import type { Weights } from "../rollout/types.js";

/** The route part of a VirtualService the view reads. */
export interface VirtualServiceView {
  metadata?: { name?: string };
  spec?: {
    http?: { name?: string; route?: { destination?: { host?: string; subset?: string }; weight?: number }[] }[];
  };
}

/** Everything `kubectl canaryapp get` shows, as read (or watched) from the API server. */
export interface Snapshot {
  app: CanaryApp;
  deployments: V1Deployment[];
  pods: V1Pod[];
  virtualService: VirtualServiceView | undefined;
  /** The app's HTTPRoute as read (`spec.mesh: gateway-api`, ADR 0026); absent with the other meshes. */
  httpRoute?: unknown;
  events: CoreV1Event[];
}

/** Options of the rendering: `wide` adds pod details and more events. */
export interface ViewOptions {
  now: Date;
  wide?: boolean;
  /** How many of the newest events to show. */
  events?: number;
}

const BAR_WIDTH = 20;

/** The label the StatefulSet controller puts on each pod: the name of its revision (status.currentRevision…). */
const STATEFULSET_REVISION_LABEL = "controller-revision-hash";

/** `[#####.....]`: the share of the way to maxWeight the current step is. */
export function progressBar(weight: number, max: number, width = BAR_WIDTH): string {
  const filled = max <= 0 ? 0 : Math.round((Math.min(weight, max) / max) * width);
  return `[${"#".repeat(filled)}${".".repeat(width - filled)}]`;
}

/** `5s`, `3m12s`, `2h4m`, `3d`: kubectl's short ages. */
export function age(from: Date | string | undefined, now: Date): string {
  if (from === undefined) return "<unknown>";
  const seconds = Math.max(0, Math.floor((now.getTime() - new Date(from).getTime()) / 1000));
  if (seconds < 120) return `${seconds}s`;
  const minutes = Math.floor(seconds / 60);
  if (minutes < 60) return `${minutes}m${seconds % 60 > 0 ? `${seconds % 60}s` : ""}`;
  const hours = Math.floor(minutes / 60);
  if (hours < 48) return `${hours}h${minutes % 60 > 0 ? `${minutes % 60}m` : ""}`;
  return `${Math.floor(hours / 24)}d`;
}

/**
 * The VirtualService's weight per track (per-track Service host, or subset), from its canary route, else its
 * first HTTP route (a route of another shape: the handover's, or one edited by hand).
 */
export function routeWeights(vs: VirtualServiceView | undefined): Partial<Record<Track, number>> {
  const out: Partial<Record<Track, number>> = {};
  const http = vs?.spec?.http ?? [];
  for (const r of (http.find((h) => h.name === CANARY_ROUTE) ?? http[0])?.route ?? []) {
    const track = destinationTrack(r.destination);
    if (track !== undefined) out[track] = r.weight ?? 0;
  }
  return out;
}

/** The app's route as the view shows it: the object, the split it gives, the phase it carries, whether it is carried. */
export interface RouteReading {
  /** `VirtualService/web`, `HTTPRoute/web`. */
  object: string;
  /** The split as the route writes it; empty when its canary rule is not in the controller's shape. */
  weights: Partial<Record<Track, number>>;
  /** The mirror phase: the share of live traffic copied to the secondary. */
  mirror?: number;
  /** The A/B phase: how many match rules send their requests to the secondary. */
  matchRules?: number;
  /**
   * The route's implementation does not carry it as written (the Gateway API's route status: a parent that has
   * not accepted it, a backend not resolved, or no report for its generation yet), with its reason and message.
   */
  notCarried?: { reason: string; message: string };
}

function phaseOf(weights: Weights | null): Pick<RouteReading, "mirror" | "matchRules"> {
  return {
    ...(weights?.mirror !== undefined ? { mirror: weights.mirror } : {}),
    ...(weights?.match !== undefined ? { matchRules: weights.match.length } : {}),
  };
}

/**
 * The split an HTTPRoute asks for, carried or not: the controller's reader with the parents it waits on taken
 * away (a route without parents has no acceptance to wait for). Null: not in the controller's shape.
 */
function writtenHTTPRouteWeights(route: unknown): Weights | null {
  const r = route as { spec?: Record<string, unknown> } | undefined;
  return readHTTPRouteWeights({ ...r, spec: { ...r?.spec, parentRefs: [] } });
}

/**
 * Reads the app's route object, with the controller's own readers: the HTTPRoute of `spec.mesh: gateway-api`
 * (whose weights count only where its implementation says it carries it), else the VirtualService (`istio`, or
 * the one a `none` app still hands over). Undefined: the snapshot has no route object.
 */
export function readRoute(s: Pick<Snapshot, "app" | "virtualService" | "httpRoute">): RouteReading | undefined {
  const name = s.app.metadata.name ?? "";
  if (s.app.spec.mesh === "gateway-api") {
    if (s.httpRoute === undefined || s.httpRoute === null) return undefined;
    const routeName = (s.httpRoute as { metadata?: { name?: string } }).metadata?.name ?? name;
    const written = writtenHTTPRouteWeights(s.httpRoute);
    const acceptance = httpRouteAcceptance(s.httpRoute);
    return {
      object: `HTTPRoute/${routeName}`,
      weights: written === null ? {} : { primary: written.primary, secondary: written.secondary },
      ...phaseOf(written),
      ...(acceptance.carried ? {} : { notCarried: { reason: acceptance.reason, message: acceptance.message } }),
    };
  }
  if (s.virtualService === undefined) return undefined;
  const read = readIstioWeights(s.virtualService);
  return {
    object: `VirtualService/${s.virtualService.metadata?.name ?? name}`,
    weights: read === null ? routeWeights(s.virtualService) : { primary: read.primary, secondary: read.secondary },
    ...phaseOf(read),
  };
}

/** What a route carries besides the split: `  mirror 20%`, `  A/B 2 rules`, or nothing. */
function routePhaseText(route: RouteReading, separator: string): string {
  if (route.mirror !== undefined) return `${separator}mirror ${route.mirror}%`;
  if (route.matchRules !== undefined) {
    return `${separator}A/B ${route.matchRules} ${route.matchRules === 1 ? "rule" : "rules"}`;
  }
  return "";
}

/** The Traffic line: what the route carries, then what the controller plans (status.weights). */
export function trafficLine(route: RouteReading | undefined, planned: CanaryAppStatus["weights"]): string {
  // A split its implementation does not carry is not routed: the data plane may have any other.
  const carried = route !== undefined && route.notCarried === undefined ? route : undefined;
  const phase = carried === undefined ? "" : routePhaseText(carried, "  ");
  const plannedPhase =
    planned?.mirror !== undefined ? `, mirror ${planned.mirror}%` : planned?.match === true ? ", A/B" : "";
  return (
    `Traffic:     primary ${carried?.weights.primary ?? "-"}%  secondary ${carried?.weights.secondary ?? "-"}%${phase}` +
    (planned ? `  (planned ${planned.primary}/${planned.secondary}${plannedPhase})` : "")
  );
}

/** The steps of the app's test as the controller runs them: each step's weight, the phase steps first. */
export function stepPlan(app: CanaryApp): { weights: number[]; phases: PhaseStep[] } {
  try {
    const { weights, phases } = withDefaults(app.spec).analysis;
    return { weights, phases };
  } catch {
    // A spec the controller cannot act on (an interval it cannot parse, say): the weighted steps as written.
    return { weights: weightSequence(app.spec.analysis), phases: [] };
  }
}

/** What a step of the mirror or A/B phase sends the secondary. */
export function phaseText(phase: PhaseStep): string {
  return phase.kind === "mirror" ? `mirror ${phase.percent}%` : "A/B (requests matching spec.analysis.match)";
}

/** The sequence of steps in short: `mirror 20% ×2, A/B ×1, weights 10,20,30`, or `weights 10,20,30` alone. */
function sequenceText(weights: readonly number[], phases: readonly PhaseStep[]): string {
  const runs: { text: string; count: number }[] = [];
  for (const phase of phases) {
    const text = phase.kind === "mirror" ? `mirror ${phase.percent}%` : "A/B";
    const last = runs[runs.length - 1];
    if (last?.text === text) last.count++;
    else runs.push({ text, count: 1 });
  }
  const weighted = weights.slice(phases.length);
  return [
    ...runs.map((r) => `${r.text} ×${r.count}`),
    weighted.length > 0 ? `weights ${weighted.join(",")}` : "no weighted steps",
  ].join(", ");
}

/** The Steps line: the bar up to the highest weight, the step (and what a phase step is), the whole sequence. */
export function stepsLine(app: CanaryApp, stepIndex: number): string {
  const { weights, phases } = stepPlan(app);
  const max = Math.max(0, ...weights);
  const step = Math.min(stepIndex, weights.length - 1);
  const weight = step < 0 ? 0 : (weights[step] ?? 0);
  const phase = step < 0 ? undefined : phases[step];
  const stepText =
    step < 0
      ? `before step 1 of ${weights.length}`
      : `step ${step + 1} of ${weights.length}${phase !== undefined ? `: ${phaseText(phase)}` : ""}`;
  // Phases only (analysis.weighted: false): no weight to grow towards.
  const share = max > 0 ? `, ${weight}% of ${max}%` : "";
  return `Steps:       ${progressBar(weight, max)} ${stepText}${share} (${sequenceText(weights, phases)})`;
}

/** The route's reason for not carrying it, on one line. */
function notCarriedLine(route: RouteReading | undefined): string[] {
  if (route?.notCarried === undefined) return [];
  const { reason, message } = route.notCarried;
  return [`Route:       not carried: ${reason}: ${message.replace(/\s*\n\s*/g, " ")}`];
}

function podLine(pod: V1Pod, now: Date, wide: boolean): string {
  const statuses = pod.status?.containerStatuses ?? [];
  const ready = statuses.filter((c) => c.ready).length;
  const total = pod.spec?.containers.length ?? statuses.length;
  const restarts = statuses.reduce((n, c) => n + c.restartCount, 0);
  const parts = [
    `Pod/${pod.metadata?.name ?? "?"}`,
    pod.status?.phase ?? "Pending",
    `ready ${ready}/${total}`,
    `restarts ${restarts}`,
    age(pod.metadata?.creationTimestamp, now),
  ];
  if (wide) parts.push(`node ${pod.spec?.nodeName ?? "<none>"}`, `ip ${pod.status?.podIP ?? "<none>"}`);
  return parts.join("  ");
}

function deploymentLine(d: V1Deployment, now: Date): string {
  const image = d.spec?.template.spec?.containers[0]?.image ?? "?";
  const ready = d.status?.readyReplicas ?? 0;
  const want = d.spec?.replicas ?? 0;
  return `Deployment/${d.metadata?.name ?? "?"}  ${image}  ready ${ready}/${want}  ${age(d.metadata?.creationTimestamp, now)}`;
}

/** The StatefulSet's line and its pods by ordinal, each with its revision and whether it is the stable or the canary one. */
function statefulSetChild(
  s: Snapshot,
  workload: WorkloadStatus,
  now: Date,
  wide: boolean,
): { line: string; sub: string[] } {
  const name = s.app.metadata.name ?? "";
  const ordinal = (p: V1Pod) => Number((p.metadata?.name ?? "").slice(name.length + 1));
  const pods = s.pods
    .filter((p) => p.metadata?.labels?.[STATEFULSET_REVISION_LABEL] !== undefined)
    .sort((a, b) => ordinal(a) - ordinal(b));
  const sub = pods.map((p) => {
    const revision = p.metadata?.labels?.[STATEFULSET_REVISION_LABEL] ?? "";
    const role =
      revision === workload.canaryRevision ? "canary" : revision === workload.stableRevision ? "stable" : "other";
    const image = p.spec?.containers[0]?.image ?? "?";
    return `${podLine(p, now, wide)}  ${image}  ${role} ${revision}`;
  });
  return {
    line: `StatefulSet/${name}  stable ${workload.stableReplicas}  canary ${workload.canaryReplicas}`,
    sub,
  };
}

function trackOf(labels: Record<string, string> | undefined): string {
  return labels?.[LABELS.track] ?? "";
}

/** A batch release: `Batch:  1/2 paused  (1 paused, 4 pending)  rollback running`. */
export function batchLine(batch: BatchStatus): string {
  const each = batch.batches.map((b) => `${b.replicas} ${b.state}`).join(", ");
  const rollback = batch.rollback !== undefined ? `  rollback ${batch.rollback.state}` : "";
  return `Batch:       ${batch.summary}  (new replicas per batch: ${each})${rollback}`;
}

/**
 * The analysis templates the app names, why they do not resolve (AnalysisReady False), and the metrics its
 * running test recorded from them (ADR 0031); undefined for an app with none.
 */
export function templatesLine(app: CanaryApp): string | undefined {
  const refs = app.spec.analysis?.templates ?? [];
  const recorded = app.status?.canary?.analysisTemplates;
  if (refs.length === 0 && recorded === undefined) return undefined;
  const named = refs.map((ref) => `${ref.kind ?? "CanaryAnalysisTemplate"}/${ref.name}`).join(", ");
  const ready = app.status?.conditions?.find((c) => c.type === "AnalysisReady");
  const problem = ready?.status === "False" ? ` (${ready.reason}: ${ready.message})` : "";
  const test =
    recorded === undefined
      ? ""
      : `; this test: ${recorded
          .map(
            (t) =>
              `${t.kind}/${t.name}${t.resourceVersion !== undefined ? ` at resourceVersion ${t.resourceVersion}` : ""} (${t.metrics.map((m) => m.name).join(", ")})`,
          )
          .join(", ")}`;
  return `Templates:   ${named === "" ? "<none>" : named}${problem}${test}`;
}

/** The header lines: phase, images, the step bar, the last analysis and the route. */
function header(s: Snapshot, now: Date): string[] {
  const { app } = s;
  const status = app.status ?? {};
  const lines = [
    `Name:        ${app.metadata.name ?? ""}`,
    `Namespace:   ${app.metadata.namespace ?? ""}`,
    `Phase:       ${status.phase ?? "<none>"}${status.observedGeneration !== undefined && status.observedGeneration < (app.metadata.generation ?? 0) ? " (not yet observed: generation " + String(app.metadata.generation) + ")" : ""}`,
    `Image:       ${app.spec.image}`,
    `Primary:     ${status.primaryImage ?? "<none>"}`,
  ];
  if (status.message) lines.push(`Message:     ${status.message}`);
  const templates = templatesLine(app);
  if (templates !== undefined) lines.push(templates);
  const canary = status.canary;
  if (canary !== undefined) {
    const batches = app.spec.strategy?.type === "batches";
    lines.push(
      `Canary:      ${canary.image}  stage ${canary.stage}${canary.pausedAt !== undefined ? " (paused)" : ""}  started ${age(canary.startedAt, now)} ago`,
      // A batch release's steps are its batches (the Batch line); their weights follow the pods.
      ...(batches ? [] : [stepsLine(app, canary.step)]),
      `Failed:      ${canary.failedChecks} check(s)`,
    );
    const last = canary.lastAnalysis;
    if (last !== undefined) {
      const values = last.metrics.map((m) => {
        const bounds = [m.min !== undefined ? `min ${m.min}` : "", m.max !== undefined ? `max ${m.max}` : ""]
          .filter((b) => b !== "")
          .join(" ");
        if (m.kind === "judge") return `${m.name}=${judgedFigures(m)} ${m.passed ? "ok" : m.reason}`;
        return `${m.name}=${m.value ?? "no data"}${bounds ? ` (${bounds})` : ""} ${m.passed ? "ok" : m.reason}`;
      });
      lines.push(`Analysis:    ${last.passed ? "passed" : "failed"} ${age(last.time, now)} ago: ${values.join(", ")}`);
    }
  }
  const workload = status.workload;
  if (workload !== undefined) {
    lines.push(
      `Workload:    ${workload.kind}  stable ${workload.stableRevision ?? "-"} (${workload.stableReplicas} pods)  canary ${workload.canaryRevision ?? "-"} (${workload.canaryReplicas} pods)`,
    );
  }
  if (status.batch !== undefined) lines.push(batchLine(status.batch));
  const route = readRoute(s);
  lines.push(trafficLine(route, status.weights), ...notCarriedLine(route));
  return lines;
}

/** The tree: CanaryApp → Deployments → pods, and the route object (VirtualService, HTTPRoute) with its weights. */
function tree(s: Snapshot, now: Date, wide: boolean): string[] {
  const name = s.app.metadata.name ?? "";
  const lines = [`CanaryApp/${name}`];
  const order: Record<string, number> = { primary: 0, secondary: 1 };
  const deployments = [...s.deployments].sort(
    (a, b) => (order[trackOf(a.metadata?.labels)] ?? 2) - (order[trackOf(b.metadata?.labels)] ?? 2),
  );
  const children: { line: string; sub: string[] }[] = deployments.map((d) => {
    const track = trackOf(d.metadata?.labels);
    const pods = s.pods
      .filter((p) => trackOf(p.metadata?.labels) === track)
      .sort((a, b) => (a.metadata?.name ?? "").localeCompare(b.metadata?.name ?? ""));
    return { line: deploymentLine(d, now), sub: pods.map((p) => podLine(p, now, wide)) };
  });
  const workload = s.app.status?.workload;
  if (workload?.kind === "StatefulSet") children.push(statefulSetChild(s, workload, now, wide));
  const route = readRoute(s);
  if (route !== undefined) {
    // The split as written; whether it is carried is the route's status, said after it.
    children.push({
      line:
        `${route.object}  primary ${route.weights.primary ?? "-"}  secondary ${route.weights.secondary ?? "-"}` +
        routePhaseText(route, "  ") +
        (route.notCarried !== undefined ? `  (not carried: ${route.notCarried.reason})` : ""),
      sub: [],
    });
  }
  children.forEach((child, i) => {
    const last = i === children.length - 1;
    lines.push(`${last ? "└── " : "├── "}${child.line}`);
    child.sub.forEach((sub, j) => {
      lines.push(`${last ? "    " : "│   "}${j === child.sub.length - 1 ? "└── " : "├── "}${sub}`);
    });
  });
  return lines;
}

function eventTime(e: CoreV1Event): number {
  const t = e.lastTimestamp ?? e.eventTime ?? e.firstTimestamp ?? e.metadata.creationTimestamp;
  return t === undefined ? 0 : new Date(t).getTime();
}

function eventLines(s: Snapshot, now: Date, count: number): string[] {
  const newest = [...s.events].sort((a, b) => eventTime(a) - eventTime(b)).slice(-count);
  if (newest.length === 0) return [];
  return [
    "Events:",
    ...newest.map(
      (e) =>
        `  ${age(new Date(eventTime(e)), now).padEnd(6)} ${(e.type ?? "").padEnd(8)} ${(e.reason ?? "").padEnd(18)} ${e.message ?? ""}`,
    ),
  ];
}

/** The whole view of `get NAME`, as lines of text. */
export function renderSnapshot(s: Snapshot, options: ViewOptions): string {
  const wide = options.wide ?? false;
  return [
    ...header(s, options.now),
    "",
    ...tree(s, options.now, wide),
    "",
    ...eventLines(s, options.now, options.events ?? (wide ? 20 : 5)),
  ]
    .join("\n")
    .trimEnd();
}

/** A judged metric's figures (ADR 0030) in a line: `26.1 vs 20 (shift 6 [5, 7], p 0.0001 α 0.0056, 10/10 samples)`. */
function judgedFigures(m: MetricResult): string {
  const f = m.figures ?? {};
  const n = (name: string): string => {
    const v = f[name];
    return v === undefined ? "?" : String(Math.round(v * 10000) / 10000);
  };
  if (f["secondaryMedian"] === undefined) return `no data (${n("secondarySamples")}/${n("primarySamples")} samples)`;
  const test = f["p"] !== undefined ? `, p ${n("p")} α ${n("alpha")}` : "";
  return `${n("secondaryMedian")} vs ${n("primaryMedian")} (shift ${n("shift")} [${n("shiftLow")}, ${n("shiftHigh")}]${test}, ${n("secondarySamples")}/${n("primarySamples")} samples)`;
}

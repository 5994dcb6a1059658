import type { V1Deployment, V1Pod, CoreV1Event } from "@kubernetes/client-node";
import { weightSequence } from "../api/defaults.js";
import type { CanaryApp, Track, WorkloadStatus } from "../api/types.js";
import { LABELS } from "../api/types.js";
import { destinationTrack } from "../router/istio.js";

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

/** The VirtualService's weight per track (per-track Service host, or subset), from its first HTTP route. */
export function routeWeights(vs: VirtualServiceView | undefined): Partial<Record<Track, number>> {
  const out: Partial<Record<Track, number>> = {};
  for (const r of vs?.spec?.http?.[0]?.route ?? []) {
    const track = destinationTrack(r.destination);
    if (track !== undefined) out[track] = r.weight ?? 0;
  }
  return out;
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
  const weights = weightSequence(app.spec.analysis);
  const max = weights[weights.length - 1] ?? 0;
  const canary = status.canary;
  if (canary !== undefined) {
    const step = Math.min(canary.step, weights.length - 1);
    const weight = step < 0 ? 0 : (weights[step] ?? 0);
    const stepText = step < 0 ? `before step 1 of ${weights.length}` : `step ${step + 1} of ${weights.length}`;
    lines.push(
      `Canary:      ${canary.image}  stage ${canary.stage}${canary.pausedAt !== undefined ? " (paused)" : ""}  started ${age(canary.startedAt, now)} ago`,
      `Steps:       ${progressBar(weight, max)} ${stepText}, ${weight}% of ${max}% (weights ${weights.join(",")})`,
      `Failed:      ${canary.failedChecks} check(s)`,
    );
    const last = canary.lastAnalysis;
    if (last !== undefined) {
      const values = last.metrics.map((m) => {
        const bounds = [m.min !== undefined ? `min ${m.min}` : "", m.max !== undefined ? `max ${m.max}` : ""]
          .filter((b) => b !== "")
          .join(" ");
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
  const route = routeWeights(s.virtualService);
  const planned = status.weights;
  lines.push(
    `Traffic:     primary ${route.primary ?? "-"}%  secondary ${route.secondary ?? "-"}%` +
      (planned ? `  (planned ${planned.primary}/${planned.secondary})` : ""),
  );
  return lines;
}

/** The tree: CanaryApp → Deployments → pods, and the VirtualService with its weights. */
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
  if (s.virtualService !== undefined) {
    const route = routeWeights(s.virtualService);
    children.push({
      line: `VirtualService/${s.virtualService.metadata?.name ?? name}  primary ${route.primary ?? "-"}  secondary ${route.secondary ?? "-"}`,
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

import type {
  AnalysisSpec,
  MatchRule,
  BatchPause,
  Mesh,
  CanaryAppSpec,
  CompareSpec,
  MetricCheck,
  PodSettings,
  PrometheusConnection,
  Scaling,
  ScoreSpec,
  ServiceSpec,
  WebhookSpec,
  WorkloadSpec,
} from "./types.js";
import { batchWeightSequence } from "./batch-sizes.js";
import { normalRule } from "./match-rule.js";

/** The spec with every default filled: what the controller reasons about. Mirrors the CRD's schema defaults. */
export interface ResolvedSpec {
  image: string;
  imageListenPort: number;
  replicas: number;
  testReplicas: number;
  prometheusQuery: string | undefined;
  prometheusURL: string | undefined;
  prometheus: Required<Pick<PrometheusConnection, "timeoutSeconds">> & Pick<PrometheusConnection, "secretRef">;
  analysis: ResolvedAnalysis;
  /** Seconds the secondary is kept after the route stops sending it traffic. */
  drainSeconds: number;
  /** An autoscaler owns the primary's replicas. */
  autoscalerRef: { name: string } | undefined;
  /** How the secondary is sized during a test. */
  scaling: Scaling;
  service: Required<Pick<ServiceSpec, "port" | "hosts" | "gateways">>;
  pod: PodSettings;
  /** `steps`, or `batches` with their count and pause (ADR 0014). */
  strategy: ResolvedStrategy;
  mesh: Mesh;
  /** The workload kind, with a StatefulSet's fields resolved. */
  workload: ResolvedWorkload;
}

/** How a release grows: by traffic steps, or by batches of replicas. */
export type ResolvedStrategy = { type: "steps" } | { type: "batches"; count: number; pause: BatchPause };

/** spec.workload with its defaults: a Deployment, or a StatefulSet with its service name and policy. */
export type ResolvedWorkload =
  | { kind: "Deployment" }
  | (Required<Pick<WorkloadSpec, "volumeClaimTemplates" | "podManagementPolicy">> & {
      kind: "StatefulSet";
      /** Absent: the app's name. */
      serviceName: string | undefined;
    });

export interface ResolvedAnalysis {
  intervalSeconds: number;
  /**
   * The weights the secondary goes through, in order; the last one is the highest before promotion. The steps
   * of the mirror and A/B phases come first, at weight 0 (`phases`).
   */
  weights: number[];
  /** The steps of the mirror and A/B phases, the first steps of `weights`, in order (ADR 0027). */
  phases: PhaseStep[];
  threshold: number;
  progressDeadlineSeconds: number;
  failWhenPrometheusFails: boolean;
  manualPromotion: boolean;
  metrics: MetricCheck[];
  requireTraffic: boolean;
  minRequests: number;
  trafficQuery: string | undefined;
  inconclusiveLimit: number;
  /** The comparison with the primary, when the spec asks for one. */
  compare: Required<CompareSpec> | undefined;
  /** The webhooks of the test, in the spec's order. */
  webhooks: WebhookSpec[];
  /** The pass and marginal scores of the judged metrics (ADR 0030). */
  score: Required<ScoreSpec>;
}

export const DEFAULTS = {
  replicas: 1,
  testReplicas: 1,
  interval: "30s",
  stepWeight: 10,
  maxWeight: 50,
  threshold: 1,
  progressDeadlineSeconds: 600,
  failWhenPrometheusFails: true,
  manualPromotion: false,
  requireTraffic: true,
  minRequests: 20,
  inconclusiveLimit: 5,
  compareMinSamples: 100,
  compareErrorMarginPercent: 1,
  compareLatencyRatioMax: 1.5,
  scorePass: 95,
  scoreMarginal: 75,
  servicePort: 80,
  prometheusTimeoutSeconds: 5,
  drainSeconds: 5,
  scaling: "fixed" as Scaling,
  batchPause: "first" as BatchPause,
  mesh: "istio" as Mesh,
} as const;

const DURATION_PART = /(\d+(?:\.\d+)?)(ms|s|m|h)/g;
const DURATION = /^(?:\d+(?:\.\d+)?(?:ms|s|m|h))+$/;

/** Parses a Go-style duration ("30s", "1m30s", "500ms") into seconds; throws on anything else. */
export function parseDurationSeconds(text: string): number {
  if (!DURATION.test(text)) throw new Error(`invalid duration "${text}": use forms like 30s, 1m, 1m30s`);
  const unit = { ms: 0.001, s: 1, m: 60, h: 3600 } as const;
  let total = 0;
  for (const match of text.matchAll(DURATION_PART)) {
    total += Number(match[1]) * unit[match[2] as keyof typeof unit];
  }
  return total;
}

/** What a step of the mirror or A/B phase sends the secondary besides its weight (0). */
export type PhaseStep = { kind: "mirror"; percent: number } | { kind: "match"; rules: MatchRule[] };

/** The mirror phase's steps, then the A/B phase's: one per iteration (the rules in their canonical form). */
export function phaseSteps(analysis: AnalysisSpec | undefined): PhaseStep[] {
  const steps: PhaseStep[] = [];
  const mirror = analysis?.mirror;
  if (mirror !== undefined) {
    for (let i = 0; i < (mirror.iterations ?? 1); i++) steps.push({ kind: "mirror", percent: mirror.percent });
  }
  const match = analysis?.match;
  if (match !== undefined) {
    const rules = match.rules.map(normalRule);
    for (let i = 0; i < (match.iterations ?? 1); i++) steps.push({ kind: "match", rules });
  }
  return steps;
}

/** The weight sequence: the explicit list when given, else stepWeight, 2×stepWeight, … up to maxWeight. */
export function weightSequence(analysis: AnalysisSpec | undefined): number[] {
  if (analysis?.stepWeights && analysis.stepWeights.length > 0) return [...analysis.stepWeights];
  const step = analysis?.stepWeight ?? DEFAULTS.stepWeight;
  const max = analysis?.maxWeight ?? DEFAULTS.maxWeight;
  const weights: number[] = [];
  for (let w = step; w < max; w += step) weights.push(w);
  weights.push(max);
  return weights;
}

function resolveStrategy(spec: CanaryAppSpec): ResolvedStrategy {
  const strategy = spec.strategy;
  if (strategy?.type !== "batches" || strategy.batches === undefined) return { type: "steps" };
  return { type: "batches", count: strategy.batches.count, pause: strategy.batches.pause ?? DEFAULTS.batchPause };
}

export function withDefaults(spec: CanaryAppSpec): ResolvedSpec {
  const analysis = spec.analysis;
  const strategy = resolveStrategy(spec);
  const replicas = spec.replicas ?? DEFAULTS.replicas;
  return {
    image: spec.image,
    imageListenPort: spec.imageListenPort,
    replicas,
    testReplicas: spec.testReplicas ?? DEFAULTS.testReplicas,
    prometheusQuery: spec.prometheusQuery,
    prometheusURL: spec.prometheusURL,
    prometheus: {
      timeoutSeconds: spec.prometheus?.timeoutSeconds ?? DEFAULTS.prometheusTimeoutSeconds,
      ...(spec.prometheus?.secretRef ? { secretRef: spec.prometheus.secretRef } : {}),
    },
    analysis: {
      intervalSeconds: parseDurationSeconds(analysis?.interval ?? DEFAULTS.interval),
      weights:
        strategy.type === "batches"
          ? batchWeightSequence(replicas, strategy.count)
          : [...phaseSteps(analysis).map(() => 0), ...(analysis?.weighted === false ? [] : weightSequence(analysis))],
      phases: strategy.type === "batches" ? [] : phaseSteps(analysis),
      threshold: analysis?.threshold ?? DEFAULTS.threshold,
      progressDeadlineSeconds: analysis?.progressDeadlineSeconds ?? DEFAULTS.progressDeadlineSeconds,
      failWhenPrometheusFails: analysis?.failWhenPrometheusFails ?? DEFAULTS.failWhenPrometheusFails,
      manualPromotion: analysis?.manualPromotion ?? DEFAULTS.manualPromotion,
      metrics: analysis?.metrics ?? [],
      requireTraffic: analysis?.requireTraffic ?? DEFAULTS.requireTraffic,
      minRequests: analysis?.minRequests ?? DEFAULTS.minRequests,
      trafficQuery: analysis?.trafficQuery,
      inconclusiveLimit: analysis?.inconclusiveLimit ?? DEFAULTS.inconclusiveLimit,
      compare:
        analysis?.compare === undefined
          ? undefined
          : {
              minSamples: analysis.compare.minSamples ?? DEFAULTS.compareMinSamples,
              errorMarginPercent: analysis.compare.errorMarginPercent ?? DEFAULTS.compareErrorMarginPercent,
              latencyRatioMax: analysis.compare.latencyRatioMax ?? DEFAULTS.compareLatencyRatioMax,
            },
      webhooks: analysis?.webhooks ?? [],
      score: {
        pass: analysis?.score?.pass ?? DEFAULTS.scorePass,
        marginal: analysis?.score?.marginal ?? DEFAULTS.scoreMarginal,
      },
    },
    drainSeconds: spec.drainSeconds ?? DEFAULTS.drainSeconds,
    autoscalerRef: spec.autoscalerRef,
    scaling: spec.scaling ?? DEFAULTS.scaling,
    service: {
      port: spec.service?.port ?? DEFAULTS.servicePort,
      hosts: spec.service?.hosts ?? [],
      gateways: spec.service?.gateways ?? [],
    },
    pod: spec.pod ?? {},
    strategy,
    mesh: spec.mesh ?? DEFAULTS.mesh,
    workload: resolveWorkload(spec.workload),
  };
}

function resolveWorkload(workload: WorkloadSpec | undefined): ResolvedWorkload {
  if (workload?.kind !== "StatefulSet") return { kind: "Deployment" };
  return {
    kind: "StatefulSet",
    serviceName: workload.serviceName,
    volumeClaimTemplates: workload.volumeClaimTemplates ?? [],
    podManagementPolicy: workload.podManagementPolicy ?? "OrderedReady",
  };
}

/**
 * The CanaryApp API in TypeScript: the contract that crds/canaryapp.yaml enforces in the API server.
 * Optional fields are filled by the schema's defaults on the server; `withDefaults` (defaults.ts) fills
 * them again in memory so that code never has to guess.
 */

export const GROUP = "canaryapp.io";
export const VERSION = "v1alpha1";
export const API_VERSION = `${GROUP}/${VERSION}`;
export const KIND = "CanaryApp";
export const PLURAL = "canaryapps";

/** The one field manager under which every owned object is server-side applied. */
export const FIELD_MANAGER = "canaryapp-controller";

/** Labels on every child, so informers can watch only what this controller manages. */
export const LABELS = {
  managedBy: "app.kubernetes.io/managed-by",
  app: "canaryapp.io/app",
  track: "canaryapp.io/track",
  /**
   * Sharded only (ADR 0016): the share of the child's app, "<share>-of-<shares>" — in object metadata, never
   * in a pod template (a new pod label would restart every pod). A replica that gains a share lists its
   * children by it.
   */
  share: "canaryapp.io/share",
} as const;
export const MANAGED_BY_VALUE = "canaryapp";

/** Which of the two Deployments a pod belongs to; also the DestinationRule subset names. */
export type Track = "primary" | "secondary";

/**
 * Manual controls that do not touch `spec` (so a GitOps tool sees no drift). Each is one kubectl command:
 *   kubectl annotate canaryapp NAME canaryapp.io/paused=true          (resume: canaryapp.io/paused-)
 *   kubectl annotate canaryapp NAME canaryapp.io/promote=now --overwrite
 *   kubectl annotate canaryapp NAME canaryapp.io/abort=now --overwrite
 *   kubectl annotate canaryapp NAME canaryapp.io/retry=IMAGE --overwrite
 * `paused` is a level (it holds while present); promote, abort and retry are requests that the controller
 * records in status and then removes.
 */
export const ANNOTATIONS = {
  paused: "canaryapp.io/paused",
  promote: "canaryapp.io/promote",
  abort: "canaryapp.io/abort",
  retry: "canaryapp.io/retry",
  /** `approve=now`: a batch release paused after a batch (spec.strategy.batches.pause) goes on to the next. */
  approve: "canaryapp.io/approve",
} as const;

/**
 * On an existing object named like one of a CanaryApp's children (a Service, a Deployment, …): hands it over
 * to the CanaryApp it names, which then owns and manages it. Without it such an object is never changed.
 */
export const ADOPT_ANNOTATION = "canaryapp.io/adopt";

/** On each workload the controller applies: the revision of the pod template it was given (ADR 0011). */
export const REVISION_ANNOTATION = "canaryapp.io/revision";

/**
 * On the pods of a StatefulSet workload: the revision of their pod template (as REVISION_ANNOTATION on the
 * StatefulSet). Both tracks are one StatefulSet, so a track's pods are told apart by it (ADR 0015).
 */
export const REVISION_LABEL = "canaryapp.io/revision";

/**
 * Istio's canonical service labels, set on every pod the controller runs so that no user label decides
 * what Istio reports: without them Istio takes `app.kubernetes.io/name` before `app` and
 * `app.kubernetes.io/version` before `version` (istio.io/istio pkg/kube/labels/labels.go, CanonicalService).
 * The built-in queries select a track's requests by `destination_canonical_revision` (ADR 0023).
 */
export const ISTIO_CANONICAL_LABELS = {
  name: "service.istio.io/canonical-name",
  revision: "service.istio.io/canonical-revision",
} as const;

export interface ObjectMeta {
  name?: string;
  namespace?: string;
  uid?: string;
  generation?: number;
  resourceVersion?: string;
  creationTimestamp?: string | Date;
  deletionTimestamp?: string | Date;
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
}

export interface CanaryApp {
  apiVersion?: string;
  kind?: string;
  metadata: ObjectMeta;
  spec: CanaryAppSpec;
  status?: CanaryAppStatus;
}

export interface CanaryAppSpec {
  /** The image users want to run. A change starts a test of it on the secondary. */
  image: string;
  /** The port the container listens on. */
  imageListenPort: number;
  /** Pods of the primary Deployment. */
  replicas?: number;
  /** Pods of the secondary Deployment while a test runs. */
  testReplicas?: number;
  /** Seed-compatible analysis: a PromQL query whose non-empty result means the new version is failing. */
  prometheusQuery?: string;
  /** Prometheus base URL for this app; the controller's default is used when absent. */
  prometheusURL?: string;
  prometheus?: PrometheusConnection;
  analysis?: AnalysisSpec;
  /**
   * Seconds the secondary is kept after the route stops sending it traffic (promotion or rollback), so that
   * proxies have the new route before its pods go. Default 5.
   */
  drainSeconds?: number;
  /**
   * A HorizontalPodAutoscaler of yours that scales the primary Deployment (`<name>-primary`): the controller
   * then never sets the primary's replicas, so it does not fight the autoscaler. The secondary keeps
   * testReplicas.
   */
  autoscalerRef?: { name: string };
  /**
   * How many pods the secondary runs during a test. `fixed` (default): `testReplicas` throughout.
   * `weighted`: as many as its share of the traffic needs, `ceil(replicas × weight / 100)` and at least
   * `testReplicas`, scaled up and Available before the weight moves (ADR 0010).
   */
  scaling?: Scaling;
  service?: ServiceSpec;
  pod?: PodSettings;
  /**
   * What runs the pods: two Deployments (`<name>-primary`, `<name>-secondary`; the default), or one
   * StatefulSet `<name>` whose highest ordinals run the revision under test through a partitioned rolling
   * update, each pod on its own PersistentVolumeClaims (ADR 0015).
   */
  workload?: WorkloadSpec;
  /** Where to say that a test started, was promoted, rolled back, or an image was skipped. */
  notifications?: NotificationSpec[];
  /**
   * How the new version grows. `steps` (default): traffic weights step by step (`analysis`). `batches`: the
   * new version grows by replicas batch by batch, the old one shrinks as the new becomes available (ADR 0014).
   */
  strategy?: StrategySpec;
  /**
   * `istio` (default): a VirtualService and DestinationRule split the traffic. `gateway-api`: an HTTPRoute
   * (gateway.networking.k8s.io/v1) whose parents are the app's Service (the mesh) and its gateways splits it
   * (ADR 0026). `none`: no route object; the app's Service selects both versions and traffic follows the
   * replica counts (only with `strategy: batches`).
   */
  mesh?: Mesh;
}

/** Which traffic layer the app's route lives in (spec.mesh). */
export type Mesh = "istio" | "gateway-api" | "none";

/** How a release grows (spec.strategy). */
export type StrategyType = "steps" | "batches";

/** Which batches wait for a person's approval before the next one starts. */
export type BatchPause = "first" | "all" | "none";

export interface StrategySpec {
  type?: StrategyType;
  /** Required with `type: batches`, forbidden otherwise. */
  batches?: BatchesSpec;
}

export interface BatchesSpec {
  /** How many batches the new version grows in; 1..replicas. */
  count: number;
  /**
   * `first` (default): after batch 1 passes its analysis, wait for approval; `all`: after every batch but the
   * last; `none`: never.
   */
  pause?: BatchPause;
}

/** The kinds of workload a CanaryApp can run (spec.workload.kind). */
export type WorkloadKind = "Deployment" | "StatefulSet";

/** spec.workload: the workload kind and, for a StatefulSet, what it needs besides the pod template. */
export interface WorkloadSpec {
  kind: WorkloadKind;
  /** The StatefulSet's governing (headless) Service, which you own. Default `<name>`. */
  serviceName?: string;
  /** One PersistentVolumeClaim per pod and template, `<template>-<name>-<ordinal>`, mounted in the app container. */
  volumeClaimTemplates?: VolumeClaimTemplate[];
  /** OrderedReady (default) or Parallel, as the StatefulSet's own field. */
  podManagementPolicy?: "OrderedReady" | "Parallel";
}

/** A StatefulSet volume claim template, cut to what an app's data volume needs. */
export interface VolumeClaimTemplate {
  name: string;
  /** Where the app container mounts the volume. */
  mountPath: string;
  /** The requested size, e.g. `1Gi`. */
  storage: string;
  storageClassName?: string;
  accessModes?: string[];
}

/**
 * What the StatefulSet shows of the two revisions (status.workload): the StatefulSet controller's
 * current (stable) and update (canary) revisions and how many pods run each.
 */
export interface WorkloadStatus {
  kind: WorkloadKind;
  stableRevision?: string;
  canaryRevision?: string;
  stableReplicas: number;
  canaryReplicas: number;
}

/** How the secondary is sized during a test (spec.scaling). */
export type Scaling = "fixed" | "weighted";

export interface PrometheusConnection {
  /** Timeout for one query. */
  timeoutSeconds?: number;
  /**
   * A Secret in the app's namespace with `token` (bearer) or `username` + `password` (basic auth),
   * and optionally `ca.crt` (PEM) to verify Prometheus' certificate.
   */
  secretRef?: { name: string };
}

export interface AnalysisSpec {
  /** Time between two steps, and the window the built-in metrics look at (Go-style duration: 30s, 1m, 1m30s). */
  interval?: string;
  /** Weight added to the secondary at each step. */
  stepWeight?: number;
  /** Highest weight the secondary gets before promotion. */
  maxWeight?: number;
  /** An explicit weight sequence; overrides stepWeight/maxWeight. Strictly increasing, each 1..100. */
  stepWeights?: number[];
  /** Failed checks tolerated before rollback (a rollback happens when failed checks reach this number). */
  threshold?: number;
  /** Seconds the secondary may take to become Available (and the primary to roll out on promotion). */
  progressDeadlineSeconds?: number;
  /** When Prometheus cannot be reached after retries, count a failed check (true) or wait (false). */
  failWhenPrometheusFails?: boolean;
  /** When true, the test waits after its last step until `canaryapp.io/promote` is set. */
  manualPromotion?: boolean;
  /** Checks with thresholds; built-in Istio metrics when `query` is absent. */
  metrics?: MetricCheck[];
  /** Templates whose metrics join `metrics` (CanaryAnalysisTemplate, ClusterCanaryAnalysisTemplate). */
  templates?: AnalysisTemplateRef[];
  /** The pass and marginal scores of the judged metrics (ADR 0030). */
  score?: ScoreSpec;
  /**
   * No step passes unless the secondary is shown to have served at least `minRequests` requests during
   * it (the traffic check). `false` is the named opt-out: steps are then judged on the other checks alone,
   * and the status says so.
   */
  requireTraffic?: boolean;
  /** The fewest requests the secondary must have served during a step for its analysis to count. */
  minRequests?: number;
  /**
   * PromQL giving the number of requests the secondary served in the step; Istio's
   * `istio_requests_total` for the secondary's canonical revision over `{{stepWindow}}` when absent.
   */
  trafficQuery?: string;
  /** Analyses in a row without evidence of traffic after which the test rolls back (`NoEvidence`). */
  inconclusiveLimit?: number;
  /**
   * Judge the secondary against the primary over the same step (errors by a two-proportion test, p99 by a
   * bounded ratio), on Istio's metrics. Present (even `{}`) to turn it on.
   */
  compare?: CompareSpec;
  /**
   * Webhooks called during the test (Flagger's kinds): gates that must answer 2xx before the test moves on
   * (`confirm-rollout` before the secondary starts, `confirm-promotion` before promotion), `pre-rollout` once before
   * any traffic (a failure rolls back), `rollout` at every step, judged with the metrics, and `post-rollout`
   * after the test ended (informational).
   */
  webhooks?: WebhookSpec[];
  /**
   * A first phase in which a share of live traffic is copied to the secondary, whose answers are discarded:
   * the new version is judged on its own metrics before any user gets an answer from it (ADR 0027).
   */
  mirror?: MirrorSpec;
  /**
   * A phase (after the mirror's) in which only the requests matching `rules` go to the secondary (A/B
   * testing: chosen users, by header or cookie), judged like a step, before the weighted steps (ADR 0027).
   */
  match?: MatchSpec;
  /**
   * `false`: no weighted steps; the test promotes after its mirror and A/B phases (one of which it then needs).
   * Default true.
   */
  weighted?: boolean;
}

export interface MirrorSpec {
  /** The share of live traffic copied to the secondary, 1..100. */
  percent: number;
  /** How many analyses (intervals) the phase lasts. Default 1. */
  iterations?: number;
}

export interface MatchSpec {
  /** A request that matches any rule goes to the secondary; one matches when all its conditions do. */
  rules: MatchRule[];
  /** How many analyses (intervals) the phase lasts. Default 1. */
  iterations?: number;
}

export interface MatchRule {
  /** Request headers by name (lower case), each matched exactly or by a regular expression (RE2). */
  headers?: Record<string, StringMatch>;
  /** A cookie of the request, by name, with exactly this value. */
  cookie?: { name: string; value: string };
}

/** One of `exact` or `regex`. */
export interface StringMatch {
  exact?: string;
  regex?: string;
}

/** When a webhook is called (see AnalysisSpec.webhooks). */
export type WebhookType = "confirm-rollout" | "pre-rollout" | "rollout" | "confirm-promotion" | "post-rollout";

export interface WebhookSpec {
  /** Shown in status, conditions and events. */
  name: string;
  type: WebhookType;
  /** http(s) URL, POSTed a JSON payload; it must be allowed by the controller's URL policy. */
  url: string;
  /** Timeout of one call. Default 10. */
  timeoutSeconds?: number;
  /** Calls after the first when one fails (no answer, or not 2xx). Default 0. */
  retries?: number;
  /** Sent as is in the payload's `metadata`. */
  metadata?: Record<string, string>;
}

/** Where a notification goes (see CanaryAppSpec.notifications). */
export type NotificationType = "generic" | "slack" | "teams";

export interface NotificationSpec {
  /** `generic`: the JSON payload as is; `slack`, `teams`: a message formatted for their incoming webhooks. */
  type: NotificationType;
  /** A Secret in the app's namespace, labelled as a canaryapp credential, whose `key` (default `url`) holds the URL. */
  secretRef: { name: string; key?: string };
}

export interface CompareSpec {
  /** Requests each track must have served in the step for a comparison to count. */
  minSamples?: number;
  /** How many percentage points the secondary's 5xx ratio may exceed the primary's before it fails. */
  errorMarginPercent?: number;
  /** The highest secondary p99 / primary p99 that passes. */
  latencyRatioMax?: number;
}

/** Names of the built-in Istio metrics, scoped to the secondary's workload. */
export type BuiltinMetric = "request-success-rate" | "request-duration";

export interface MetricCheck {
  /** A name shown in status and events; `request-success-rate` or `request-duration` select built-ins. */
  name: string;
  /**
   * PromQL returning one number, or one a series (each is judged). Templates: {{name}} {{namespace}}
   * {{primary}} {{secondary}} {{service}} {{interval}} {{stepWindow}} {{stepStart}}. Required unless `name`
   * is a built-in.
   */
  query?: string;
  /** The value must be >= min. Built-in request-success-rate is a percentage. */
  min?: number;
  /** The value must be <= max. Built-in request-duration is the p99 in milliseconds. */
  max?: number;
  /** Where the query runs: the app's own Prometheus when absent. */
  provider?: MetricProviderSpec;
  /**
   * Judge the secondary against the primary on the step's samples (Mann-Whitney U, ADR 0030) instead of
   * min/max. The query is run once for each track, over the step, one sample a metric `interval`; it names the
   * track with `{{track}}`, `{{workload}}` or `{{revision}}`.
   */
  judge?: JudgeSpec;
  /** For a judged metric: the spacing of its samples (duration, default 10s). */
  interval?: string;
  /** Its share of the score across judged metrics (default 1). */
  weight?: number;
  /** A failure of this metric fails the analysis alone, whatever the score (default false). */
  critical?: boolean;
  /**
   * No data fails the metric (true, the default) or leaves it out of the score (false; it is still never a
   * pass on its own).
   */
  mustHaveData?: boolean;
  /** Set on a metric that came from a template: `<Kind>/<name>` (read-only, filled by the controller). */
  template?: string;
}

/** The kinds of metric source a query can run against. */
export type MetricProviderType = "prometheus" | "datadog" | "newrelic" | "cloudwatch" | "graphite" | "influxdb";

/** Where a metric's query runs and how the controller authenticates to it (docs/providers.md). */
export interface MetricProviderSpec {
  type: MetricProviderType;
  /**
   * The base URL of the provider's API, allowed by the controller's URL policy. `prometheus`: any server with
   * Prometheus' HTTP API (Prometheus, Thanos, Mimir, VictoriaMetrics); the app's Prometheus when absent.
   */
  address?: string;
  /**
   * A Secret in the app's namespace with the credentials (keys per provider, docs/providers.md). They are sent
   * only to `address` (bound to their destination, as the app's Prometheus credentials are).
   */
  secretRef?: { name: string };
  /** CloudWatch: the AWS region. */
  region?: string;
  /** New Relic: the account the NRQL query runs in. */
  accountId?: string;
  /** InfluxDB: the database (InfluxQL; InfluxDB 2 through its v1-compatible API). */
  database?: string;
}

/** How a judged metric compares the secondary with the primary (ADR 0030). */
export interface JudgeSpec {
  /** The change that fails it: `increase` (default: latency, errors), `decrease` (throughput), `either`. */
  direction?: "increase" | "decrease" | "either";
  /**
   * The smallest relative shift that counts, as a fraction of the primary's median (default 0.1): a shift
   * within it passes even when significant.
   */
  effectTolerance?: number;
  /** The fewest samples on each track for a verdict; fewer leave the metric unjudged (default 10). */
  minSamples?: number;
  /** The confidence across the whole test (default 0.95); each step's look is corrected (ADR 0030). */
  confidence?: number;
}

/** A template of checks used by an app, with the values of its args. */
export interface AnalysisTemplateRef {
  name: string;
  /** `CanaryAnalysisTemplate` in the app's namespace (default) or a `ClusterCanaryAnalysisTemplate`. */
  kind?: "CanaryAnalysisTemplate" | "ClusterCanaryAnalysisTemplate";
  /** Values for the template's args, used in its queries as `{{args.NAME}}`. */
  args?: { name: string; value: string }[];
}

/** The spec of a CanaryAnalysisTemplate or ClusterCanaryAnalysisTemplate: named checks to reuse. */
export interface CanaryAnalysisTemplateSpec {
  /** The args its queries use as `{{args.NAME}}`; one without `value` must be given by every app. */
  args?: { name: string; value?: string }[];
  metrics: MetricCheck[];
}

/** The two kinds of analysis template: one in the app's namespace, or one for every namespace. */
export type AnalysisTemplateKind = "CanaryAnalysisTemplate" | "ClusterCanaryAnalysisTemplate";

/** The kinds, by scope (ADR 0031). */
export const TEMPLATE_KINDS = {
  namespaced: { kind: "CanaryAnalysisTemplate", plural: "canaryanalysistemplates" },
  cluster: { kind: "ClusterCanaryAnalysisTemplate", plural: "clustercanaryanalysistemplates" },
} as const;

/** A CanaryAnalysisTemplate (namespaced) or a ClusterCanaryAnalysisTemplate (no namespace). */
export interface CanaryAnalysisTemplate {
  apiVersion?: string;
  kind?: string;
  metadata: ObjectMeta;
  spec: CanaryAnalysisTemplateSpec;
}

/** The metrics a test took from one template when it started, its args rendered (ADR 0031). */
export interface PinnedTemplate {
  kind: AnalysisTemplateKind;
  name: string;
  /** The template's resourceVersion when it was read: which version of it the test is judged by. */
  resourceVersion?: string;
  /** Each with `template` set to `<Kind>/<name>`. */
  metrics: MetricCheck[];
}

/** The score across judged metrics (ADR 0030): at or above `pass` passes, below `marginal` fails. */
export interface ScoreSpec {
  /** Default 95. */
  pass?: number;
  /** Default 75. Between the two, a step goes on, but the last step must reach `pass`. */
  marginal?: number;
}

export interface ServicePort {
  port?: number;
}

export interface ServiceSpec {
  /** Port of the Service (and the mesh route); targets imageListenPort. */
  port?: number;
  /** Extra hosts the VirtualService answers for (besides the Service's short name and FQDN). */
  hosts?: string[];
  /** Gateways to bind besides `mesh`, e.g. `istio-system/public-gateway`. */
  gateways?: string[];
}

export interface PodSettings {
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
  env?: EnvVar[];
  resources?: ResourceRequirements;
  readinessProbe?: Record<string, unknown>;
  livenessProbe?: Record<string, unknown>;
  serviceAccountName?: string;
  imagePullSecrets?: { name: string }[];
  command?: string[];
  args?: string[];
}

export interface EnvVar {
  name: string;
  value?: string;
  valueFrom?: Record<string, unknown>;
}

export interface ResourceRequirements {
  limits?: Record<string, string | number>;
  requests?: Record<string, string | number>;
}

// ---------------------------------------------------------------- status

/** Shown in the printer columns; derived from the rollout state, never stored apart from it. */
export type Phase =
  | "Initializing" // children being created, primary not yet Available
  | "Healthy" // primary serves spec.image, no test running
  | "Progressing" // a test is running (waiting for the secondary, or stepping)
  | "Paused" // a test is running but held by the paused annotation
  | "Promoting" // the primary is rolling out the tested image
  | "RollingBack" // traffic is returning to the primary after a failed test
  | "Failed" // spec.image is a recorded failed image; nothing runs until it changes or is retried
  | "Invalid"; // the spec cannot be acted on; see conditions

export type ConditionStatus = "True" | "False" | "Unknown";

export interface Condition {
  type: string;
  status: ConditionStatus;
  reason: string;
  message: string;
  lastTransitionTime: string;
  observedGeneration?: number;
}

/** Standard condition types on a CanaryApp. */
export const CONDITION = {
  /** The primary is Available and takes all traffic the route gives it. */
  Ready: "Ready",
  /** A test is running (True) or not (False, with the reason the last one ended). */
  Progressing: "Progressing",
  /** The spec cannot be acted on (True), e.g. a manual-only problem the schema could not catch. */
  InvalidSpec: "InvalidSpec",
  /** A manual-control annotation holds a value it does not accept (True, with what it accepts). */
  InvalidAnnotation: "InvalidAnnotation",
} as const;

export interface CanaryAppStatus {
  phase?: Phase;
  observedGeneration?: number;
  conditions?: Condition[];
  /** A sentence that says what is going on. */
  message?: string;
  /** The image the primary runs (the last promoted one), as the user named it. */
  primaryImage?: string;
  /** What the primary runs: the user's reference, the digest it was pinned to, and its pod template. */
  primary?: PrimaryRecord;
  /**
   * The weights the controller routes by (intent; the route is repaired to match); in the mirror phase the
   * share copied to the secondary (`mirror`), in the A/B phase `match: true` (requests matching
   * spec.analysis.match go to the secondary).
   */
  weights?: { primary: number; secondary: number; mirror?: number; match?: boolean };
  /** The test in progress, if any. */
  canary?: CanaryState;
  /** A StatefulSet workload's revisions and their pods (absent with Deployments). */
  workload?: WorkloadStatus;
  /** The last promotion (`digest`: what the primary was pinned to, when the secondary's pods reported it). */
  lastPromotion?: { image: string; time: string; digest?: string };
  /** Images whose test failed, newest first, bounded. */
  failedImages?: FailedImage[];
  /** The notifications of this app not yet delivered (its outbox), when it has somewhere to send them. */
  notifications?: NotificationOutbox;
  /** A batch release's progress (spec.strategy.type: batches): each batch's state, and the rollback's. */
  batch?: BatchStatus;
  /**
   * The Events of the last transition that called for any, numbered; `pending` until they are known to exist
   * (a controller killed before telling them leaves them for the next one, ADR 0001).
   */
  lastEvents?: TransitionEvents;
}

/** The state of one batch of a batch release. */
export type BatchState = "pending" | "running" | "paused" | "finished";

/** A batch release's progress, derived from the test's state (never decided from). */
export interface BatchStatus {
  /** The batch running now (1-based); 0 before the first. */
  current: number;
  count: number;
  /** New replicas each batch runs, and its state, in order. */
  batches: { batch: number; replicas: number; state: BatchState }[];
  /** One line for the BATCH printer column, e.g. "1/2 paused". */
  summary: string;
  /** Present while (and after) a rollback of this release: the old version restored, the new drained. */
  rollback?: { state: "running" | "finished"; reason?: string };
}

/** The Events a status transition calls for, recorded with it (see CanaryAppStatus.lastEvents). */
export interface TransitionEvents {
  /** The transition's number: 1 for the app's first, then one more each time. */
  seq: number;
  /** When it was decided. */
  at: string;
  /** Its Events, while they may not exist yet. */
  pending?: { type: "Normal" | "Warning"; reason: string; message: string }[];
}

/**
 * What is to be said about an app: notices are added with the status transition that calls for them (so
 * a controller killed before sending still finds them), and removed once delivered.
 */
export interface NotificationOutbox {
  /** The sequence number of the last notice added. */
  seq: number;
  /** The highest sequence number delivered. */
  delivered: number;
  /** Notices not yet delivered, oldest first. */
  pending: Notice[];
}

/** What a notice tells. */
export type NoticeEvent = "TestStarted" | "Promoted" | "RolledBack" | "FailedImageSkipped" | "Failure";

/** One notification, as delivered to every target. */
export interface Notice {
  seq: number;
  /** The same for every delivery of this notice (the app's uid and seq): receivers drop repeats by it. */
  idempotencyKey: string;
  event: NoticeEvent;
  time: string;
  /** The image tested (or skipped). */
  image?: string;
  /** The image the primary runs. */
  primaryImage?: string;
  /** Why (RolledBack: AnalysisFailed, ProgressDeadlineExceeded…; Failure: ChildRejected…). */
  reason?: string;
  message: string;
  metric?: string;
  value?: number;
  query?: string;
}

/**
 * The parts of the spec that form the pod template besides the image: `imageListenPort` and `pod` (env,
 * resources, probes, command, args, labels, annotations, serviceAccountName, imagePullSecrets). A change
 * to any of them, or to the image, is a new revision and is tested before it reaches the primary.
 */
export interface PodTemplateParts {
  imageListenPort: number;
  pod: PodSettings;
}

/** What the primary runs. */
export interface PrimaryRecord {
  /** The image as the user named it (spec.image when it was promoted). */
  image: string;
  /**
   * The digest (`sha256:…`) the tested pods ran, which the primary Deployment is pinned to
   * (`repository@digest`); absent when the secondary's pods reported none (the reference is used as is).
   */
  digest?: string;
  /** The revision of the whole pod template (see `revisionOf`). */
  revision: string;
  template: PodTemplateParts;
}

export type CanaryStage =
  | "WaitingForSecondary" // secondary created, not yet Available
  | "Stepping" // shifting weight step by step, analysing between steps
  | "AwaitingPromotion" // last step passed, manual gate closed
  | "Promoting" // primary rolling out the tested image
  | "Finalising" // primary carries 100 % again; secondary to be removed
  | "RollingBack"; // 100 % to primary, then secondary removed; failure recorded

export interface CanaryState {
  /** The image under test: the only image that may ever be promoted from this test. */
  image: string;
  stage: CanaryStage;
  /** Index into the weight sequence of the step currently applied; -1 before the first step. */
  step: number;
  /** When this test started (secondary requested). */
  startedAt: string;
  /**
   * When the current stage or step was decided, or the step's last analysis ran. The next analysis is due
   * one interval after the later of this and `stepRoutedAt`.
   */
  stepStartedAt: string;
  /** Set while the paused annotation holds; on resume every clock moves on by the time paused (ADR 0022). */
  pausedAt?: string;
  /** Ending stages: when the route was first observed carrying nothing to the secondary (the drain began). */
  drainedAt?: string;
  /**
   * When the current step's weight began to apply: the start of `{{stepWindow}}`. `stepStartedAt` moves
   * on with every analysis; this stays until the step changes, so evidence gathers over the whole step.
   */
  stepBeganAt?: string;
  /**
   * Stepping and AwaitingPromotion: when the route (the VirtualService, as observed) was first seen
   * carrying the weight this step gives the secondary. Absent until then: a step decided but not yet on
   * the route (a controller that died between the status write and the apply) is not judged, and its
   * interval and `{{stepWindow}}` run from this moment, not from the decision.
   */
  stepRoutedAt?: string;
  /**
   * The metrics of `spec.analysis.templates` as they were resolved when this test started (ADR 0031): the test
   * is judged by them to its end, whatever happens to the templates meanwhile; the next test resolves afresh.
   */
  analysisTemplates?: PinnedTemplate[];
  /** Analyses of this step that could not reach a verdict, in a row; absent after a verdict. */
  inconclusive?: InconclusiveRecord;
  /**
   * Prometheus gave no answer (and `failWhenPrometheusFails` is false): the secondary gets no traffic
   * until an analysis gets an answer again, and the test ends `NoEvidence` after the progress deadline.
   */
  trafficWithheld?: boolean;
  /** Failed checks counted so far in this test. */
  failedChecks: number;
  /**
   * The digest (`sha256:…`) the secondary's ready pods report for the image: what is tested, and what is
   * promoted. Recorded when first seen; a different one later ends the test.
   */
  digest?: string;
  /**
   * Only when the test's pod template differs from the primary's beyond the image (env, resources, probes,
   * imageListenPort…): the revision under test and the template the secondary runs (and the primary gets
   * on promotion). Absent for an image-only change: the primary's template is the one tested.
   */
  revision?: string;
  template?: PodTemplateParts;
  /** With `template`: what changed besides the image, e.g. "env FOO changed". */
  changes?: string;
  /** The last analysis, with every metric's value. */
  lastAnalysis?: AnalysisRecord;
  /** The gate webhooks (confirm-rollout, pre-rollout, confirm-promotion) and what they answered. */
  gates?: GateRecord;
  /**
   * Batch releases: the batch (1-based) that passed its analysis and waits for the approve annotation before
   * the next one starts, and since when.
   */
  approval?: { batch: number; since: string };
  /** Batch releases: the last batch a person approved (a replayed approve request then says nothing). */
  approved?: number;
  /** For RollingBack/Finalising: why the test ended. */
  outcome?: { result: "Promoted" | "Failed" | "Aborted" | "Superseded"; reason: string; message: string };
}

/** The gates of one test. */
export interface GateRecord {
  /** Gate types that answered 2xx in this test; they are not asked again. */
  passed?: WebhookType[];
  /** The gate the test waits at, when one did not answer 2xx. */
  waiting?: {
    type: WebhookType;
    /** The webhook that did not answer 2xx. */
    name: string;
    message: string;
    /** When the test began to wait at it. */
    since: string;
    /** When it was last asked; it is asked again one analysis interval later. */
    checkedAt: string;
  };
}

/** Analyses in a row that reached no verdict. */
export interface InconclusiveRecord {
  /** Those for want of evidence of traffic (they count against `analysis.inconclusiveLimit`). */
  count: number;
  /** When the first of them ran: the progress deadline counts from here. */
  since: string;
}

export interface AnalysisRecord {
  time: string;
  passed: boolean;
  /** "Passed", "Failed", or "Inconclusive" (no verdict: no evidence, or no answer from Prometheus). */
  verdict?: "Passed" | "Failed" | "Inconclusive";
  /** Set when the step was judged without evidence of traffic, because `analysis.requireTraffic` is false. */
  trafficNotRequired?: boolean;
  metrics: MetricResult[];
}

export interface MetricResult {
  name: string;
  /** The measured value; absent when there was no data or the query failed. */
  value?: number;
  min?: number;
  max?: number;
  passed: boolean;
  /** Why it failed (or "ok"), e.g. "NoData", "QueryFailed", "AboveMax", "BelowMin", "NonEmptyResult". */
  reason: string;
  message?: string;
  /** What kind of check gave it: "traffic" (the evidence), "seed", "threshold", "compare" or "webhook". */
  kind?: "traffic" | "seed" | "threshold" | "compare" | "webhook" | "judge" | "score";
  /** The figures a comparison stands on: requests, errors, ratios, z, p99s. */
  figures?: Record<string, number>;
  /** The template the metric came from, `<Kind>/<name>` (ADR 0031). */
  template?: string;
  /** The query as it was run (rendered). */
  query?: string;
  /** The time the query looked back over (the step's window), as a PromQL duration. */
  window?: string;
  /** Every series' value, when the query returned several. */
  values?: number[];
  /** Requests the secondary served in the window (the traffic check's value), when known. */
  sampleSize?: number;
  /** The rule the value was judged by, e.g. "≥ 20 requests", "no series", "≥ 99". */
  rule?: string;
  /** The labels of the series that broke the rule, e.g. `{pod="a"}`. */
  failingSeries?: string[];
}

export interface FailedImage {
  image: string;
  failedAt: string;
  reason: string;
  message: string;
  /** The metric that failed, with its value, when the failure came from analysis. */
  metric?: string;
  value?: number;
  /** The query (as run) that gave the failing value. */
  query?: string;
  /** The digest the failed pods ran, when they reported it: the same build by any name is the same failure. */
  digest?: string;
  /** When the failed revision changed more than the image: its revision and what else changed. */
  revision?: string;
  /** The revision of the template besides the image (see `settingsRevisionOf`), with `revision`. */
  settingsRevision?: string;
  changes?: string;
}

/** How many failed images status keeps. */
export const MAX_FAILED_IMAGES = 10;

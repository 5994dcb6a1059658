import type { ReadonlyDeep } from "type-fest";
import type { ResolvedSpec } from "../api/defaults.js";
import type { TemplateResolution } from "../analysis/template-resolution.js";
import type {
  CanaryApp,
  CanaryAppStatus,
  MatchRule,
  MetricResult,
  PodTemplateParts,
  WebhookType,
  WorkloadStatus,
} from "../api/types.js";

/** What the reconciler saw of one track's workload (a Deployment today), from the informer cache. */
export interface WorkloadObservation {
  /** The image of the app container in the pod template. */
  image: string;
  /** spec.replicas */
  replicas: number;
  /**
   * The rollout of the current template is complete and every wanted pod is available (for a Deployment:
   * status.observedGeneration >= metadata.generation, updatedReplicas == replicas,
   * availableReplicas >= replicas, and no old pods left (status.replicas == replicas)).
   */
  available: boolean;
  readyReplicas: number;
  /** The pod-template revision the workload was applied with, when it carries one. */
  revision?: string;
  /**
   * Available pods of the current template, at least (old pods are counted as available and taken off);
   * absent while the workload's status has not caught up with its spec (for a Deployment:
   * observedGeneration < generation), as during a scale. `spec.scaling: weighted` sizes traffic by it.
   */
  currentAvailable?: number;
  /**
   * Why the workload's controller cannot create its pods (a Deployment's ReplicaFailure condition: Pod
   * Security admission, a quota, a ServiceAccount that does not exist), as it says it; absent otherwise.
   */
  podsRefused?: string;
}

export interface Weights {
  primary: number;
  secondary: number;
  /** A step of the mirror phase: the share of live traffic copied to the secondary (ADR 0027). */
  mirror?: number;
  /** A step of the A/B phase: the requests matching these rules go to the secondary (ADR 0027). */
  match?: MatchRule[];
}

/** One pod of the secondary, as its status shows it. */
export interface PodObservation {
  /** The image of the app container in the pod's spec. */
  image: string;
  /** The app container's `status.containerStatuses[].imageID` ("" until the runtime reports it). */
  imageID: string;
  /** Ready, and not being deleted. */
  ready: boolean;
}

export interface Observation {
  primary: WorkloadObservation | null;
  secondary: WorkloadObservation | null;
  /** The weights in the VirtualService as it is; null when it does not exist or has no usable route. */
  routedWeights: Weights | null;
  /**
   * The routing object's implementation does not carry it as it now is (the Gateway API's route status: not
   * accepted by a parent, a backend not resolved, or not reported on yet), with its reason and message. A step
   * it does not carry is not routed (`routedWeights` is null), and one not routed for the whole deadline ends
   * the test (decisions.ts, RouteRefused).
   */
  routeNotCarried?: { reason: string; message: string };
  /** The routing object's implementation reports that it carries it as it now is (with routeNotCarried absent). */
  routeCarried?: true;
  /**
   * Present only when `analysisDue` said so and the reconciler ran the checks: one result a check, in
   * the order of `analysisChecks(spec)`.
   */
  analysis?: MetricResult[];
  /**
   * Why the controller will not query this app's Prometheus (a Secret not made for it, a URL outside its
   * policy): the analysis cannot run, so no test takes traffic, and nothing is held against the image.
   */
  analysisRefused?: { reason: string; message: string };
  /**
   * What the app's `spec.analysis.templates` resolve to now, from the template caches (ADR 0031): their metrics,
   * or why they cannot be resolved. Absent when the app uses no template. A running test is judged by the
   * metrics recorded when it started (`status.canary.analysisTemplates`), not by these.
   */
  analysisTemplates?: TemplateResolution;
  /**
   * Why nothing of this app may be written at all (its route would answer for another team's host, an
   * earlier app owns a name its children need): the spec is shown as not acted on, and no child is touched.
   */
  specRefused?: { reason: string; message: string };
  /**
   * Present only when the planner asked for a gate (`gateWanted`) and the reconciler called its webhooks:
   * one result a webhook of that type, in the spec's order.
   */
  gate?: { type: WebhookType; results: MetricResult[] };
  /** The secondary's pods, when the reconciler watches them: the digest under test is read from them. */
  secondaryPods?: PodObservation[];
  /** What a StatefulSet workload shows of its revisions (status.workload); absent with Deployments. */
  workload?: WorkloadStatus;
  /**
   * A StatefulSet's pods of the app and what its template says, as facts: which of them are stranded is decided
   * in decisions.ts (`strandedPods`). Absent with Deployments.
   */
  setPods?: SetPodsObservation;
  /**
   * The route object another router left, from when the app had another `spec.mesh` (a VirtualService, an
   * HTTPRoute), by its kind; `handedOverAt` once it routes everything to the app's Service (decisions.ts
   * `routeHandoverDue`).
   */
  staleRoute?: { kind: string; handedOverAt?: string };
}

/** A StatefulSet's pods of one app, and what its template says of them. */
export interface SetPodsObservation {
  /** The revision of the StatefulSet's template (undefined before it carries one). */
  revision: string | undefined;
  /** The StatefulSet controller has seen the template (status.observedGeneration ≥ metadata.generation). */
  caughtUp: boolean;
  /** The ordinals at or above which the template applies. */
  partition: number;
  pods: SetPodObservation[];
}

/** One pod of a StatefulSet, as its metadata and status show it. */
export interface SetPodObservation {
  name: string;
  resourceVersion: string;
  /** Its revision label (undefined when it carries none). */
  revision: string | undefined;
  /** Its ordinal (`<set>-<n>`); undefined for a name that is none of the set's. */
  ordinal: number | undefined;
  ready: boolean;
  terminating: boolean;
}

/** A pod its workload's controller will not replace on its own. */
export interface StrandedPodObservation {
  name: string;
  /** As seen: it is deleted only if unchanged since (it may have become Ready meanwhile). */
  resourceVersion: string;
  revision: string;
}

export interface PlanInput {
  app: CanaryApp;
  spec: ResolvedSpec;
  observed: Observation;
  now: Date;
}

export interface PlannedEvent {
  type: "Normal" | "Warning";
  /** UpperCamelCase, as Kubernetes events: TestStarted, StepAdvanced, AnalysisFailed, Promoted, RolledBack... */
  reason: string;
  message: string;
}

/** Everything a reconcile should make true. The reconciler applies it; it decides nothing itself. */
export interface Plan {
  primary: { image: string; replicas: number };
  /** null: the secondary Deployment must not exist. The replicas follow spec.scaling (secondaryReplicas). */
  secondary: { image: string; replicas: number } | null;
  /** The pod template (besides the image) each track's workload must have. */
  templates?: { primary: ReadonlyDeep<PodTemplateParts>; secondary: ReadonlyDeep<PodTemplateParts> };
  /** The weights the VirtualService must carry. Always sums to 100. */
  weights: Weights;
  /**
   * Present while a test is rolled back and the route, whose write the API server refuses, still sends the
   * secondary a share (secondaryServiceTrack): the `<name>-secondary` Service, applied before the route,
   * is to select the primary's pods instead of the secondary's. Absent: each track's Service selects its own.
   */
  secondaryServiceSelects?: "primary";
  /** The complete next status (the reconciler writes it only when it differs from the current one). */
  status: CanaryAppStatus;
  events: PlannedEvent[];
  /**
   * Whether updates to children are told by an Event of their own. Not when the plan records a transition:
   * its Events ("StepAdvanced: shifted 20% of the traffic ...") tell what those updates do. Children created
   * or deleted are always told (canary/child-events.ts).
   */
  tellChildUpdates: boolean;
  /** One-shot request annotations that were acted on and must be removed. */
  removeAnnotations: string[];
  /**
   * A route object another router left (see `Observation.staleRoute`), of kind `of`: `handOver` applies one
   * that routes everything to the app's Service, marked with `at`; `remove` deletes it (and, of a
   * VirtualService, the DestinationRule).
   */
  routeHandover?: { kind: "handOver"; of: string; at: string } | { kind: "remove"; of: string };
  /** Pods to delete so that their StatefulSet makes them again at its template's revision (forced rollback). */
  deletePods?: StrandedPodObservation[];
  /** Reconcile again after this many seconds even if nothing changes (a step or a deadline is due). */
  requeueAfterSeconds?: number;
}

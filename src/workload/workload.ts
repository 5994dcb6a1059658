import type { ReadonlyDeep } from "type-fest";
import type { ResolvedSpec } from "../api/defaults.js";
import type { ChildMeta } from "../api/meta.js";
import type { CanaryApp, PodTemplateParts, Track, WorkloadStatus } from "../api/types.js";
import type { SetPodsObservation, WorkloadObservation } from "../rollout/types.js";

/** A workload object as the target hands it to the reconciler for server-side apply. */
export interface WorkloadObject {
  apiVersion: string;
  kind: string;
  metadata: ChildMeta;
}

/** What one track must run. */
export interface TrackWant {
  image: string;
  replicas: number;
  /** The pod template besides the image (spec's when absent): a revision under test differs from the primary's. */
  template?: ReadonlyDeep<PodTemplateParts>;
}

/**
 * What runs the app's pods, one object per track (primary, secondary): a Deployment today, a StatefulSet
 * next. Beside `TrafficRouter`, and like it pure: it says which object runs a track and reads back what the
 * cluster shows of one; the reconciler does the I/O. The planner sees only the `WorkloadObservation`.
 */
export interface WorkloadTarget {
  /** The API coordinates of the workload objects (the reconciler's cache and deletes go by `kind`). */
  readonly apiVersion: string;
  readonly kind: string;
  /** The name of the app's container in the pods, whose status tells the image digest. */
  readonly appContainer: string;
  /** The object that runs `track` with this image and replica count. */
  desired(app: CanaryApp, spec: ResolvedSpec, track: Track, want: TrackWant): WorkloadObject;
  /**
   * What the cached object shows: its image, and whether it is ready to take traffic (or be promoted
   * onto); null when it does not exist.
   */
  observe(object: unknown): WorkloadObservation | null;
}

/** What both tracks must run: the secondary is null when no test runs (or its pods are to go). */
export interface TrackWants {
  primary: TrackWant;
  secondary: TrackWant | null;
  /** The primary is taking (or has just taken) the tested revision: a promotion or its end. */
  promoting: boolean;
}

/** Both tracks as one workload's observation, and what the status shows of its revisions. */
export interface SharedObservation {
  primary: WorkloadObservation | null;
  secondary: WorkloadObservation | null;
  status: WorkloadStatus | undefined;
}

/**
 * A workload where both tracks are one object (a StatefulSet whose highest ordinals run the revision
 * under test): it is given both tracks' wants at once, and its observation is split back into the two
 * tracks the planner reasons about. Pods of a track are told apart by labels, so the per-track Services
 * select them with `podSelector` instead of by track.
 */
export interface SharedWorkloadTarget {
  readonly shared: true;
  readonly apiVersion: string;
  readonly kind: string;
  readonly appContainer: string;
  /** The one object's name. */
  objectName(app: CanaryApp): string;
  desired(app: CanaryApp, spec: ResolvedSpec, wants: TrackWants): WorkloadObject;
  observe(object: unknown): SharedObservation;
  /** The labels that select the pods of `track` given what both tracks must run. */
  podSelector(app: CanaryApp, spec: ResolvedSpec, track: Track, wants: TrackWants): Record<string, string>;
  /** The app's pods of the one object, and what its template says of them (rollout/decisions.ts judges them). */
  setPods(object: unknown, pods: readonly unknown[], app: string): SetPodsObservation | undefined;
}

/** Either shape of workload target. */
export type AnyWorkloadTarget = WorkloadTarget | SharedWorkloadTarget;

/** The target is one object for both tracks. */
export function isShared(target: AnyWorkloadTarget): target is SharedWorkloadTarget {
  return "shared" in target && target.shared;
}

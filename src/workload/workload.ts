import type { ResolvedSpec } from "../api/defaults.js";
import type { ChildMeta } from "../api/meta.js";
import type { CanaryApp, PodTemplateParts, Track } from "../api/types.js";
import type { WorkloadObservation } from "../rollout/types.js";

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
  template?: PodTemplateParts;
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

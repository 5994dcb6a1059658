import type { ResolvedSpec } from "../api/defaults.js";
import type { CanaryApp, Track } from "../api/types.js";
import type { Weights, WorkloadObservation } from "../rollout/types.js";

/** The labels that select each track's pods. */
export type TrackSelectors = Record<Track, Record<string, string>>;

/** A Kubernetes object as the router hands it to the reconciler for server-side apply. */
export interface RoutingObject {
  apiVersion: string;
  kind: string;
  metadata: { name: string; namespace: string; annotations?: Record<string, string> };
}

/**
 * How traffic is split between the primary and the secondary. Implementations are pure: they say which
 * objects carry a split and read the split back from what the cluster holds; the reconciler does the I/O.
 */
export interface TrafficRouter {
  /** The kind of the object that carries the split, read back by `routedWeights`. */
  readonly kind: string;
  /**
   * The objects that route this app's traffic with these weights. `selectors`: the labels of each track's
   * pods, when the workload tells the tracks apart otherwise than by the track label (a StatefulSet: by
   * revision).
   */
  desired(app: CanaryApp, spec: ResolvedSpec, weights: Weights, selectors?: TrackSelectors): RoutingObject[];
  /** The name of the object that carries the split (read back by `routedWeights`). */
  objectName(app: CanaryApp): string;
  /** The weights the routing object actually carries, or null when it is missing or not ours to read. */
  routedWeights(routingObject: unknown): Weights | null;
  /**
   * A router whose implementation reports on the routing object (the Gateway API's `status.parents`): whether
   * it carries the object as it now is, and why not. Absent: written is carried (Istio reports nothing).
   */
  acceptance?(routingObject: unknown): RouteAcceptance;
  /**
   * A router that carries no object (no mesh): the split as the pods make it, read from the workloads.
   * When present, `routedWeights` is not consulted.
   */
  splitByPods?(primary: WorkloadObservation | null, secondary: WorkloadObservation | null): Weights;
  /**
   * A router that replaced others (`mesh: istio` switched to `none`): the others' routing objects it hands
   * over and then removes (decisions.ts `routeHandoverDue`), one kind each.
   */
  leftovers?: readonly LeftoverRoute[];
}

/** Whether a route's implementation carries it as it now is (TrafficRouter.acceptance). */
export type RouteAcceptance =
  | { carried: true }
  | { carried: false; reason: "RouteNotReported" | "RouteNotAccepted" | "RouteRefsNotResolved"; message: string };

/** The routing objects another router left, handed over before they go. */
export interface LeftoverRoute {
  /** The kind of the object that routed traffic (its cache tells whether one is left). */
  readonly kind: string;
  /** Its name for this app. */
  name(app: CanaryApp): string;
  /** When it was handed over, read from it; nothing while it still carries the old split. */
  read(object: unknown): { handedOverAt?: string };
  /** The objects that send everything where this router sends traffic, marked with `at`. */
  handover(app: CanaryApp, spec: ResolvedSpec, at: string): RoutingObject[];
  /** Every object of the old router, to delete once the handover has stood its time. */
  objects(app: CanaryApp): { apiVersion: string; kind: string; name: string }[];
}

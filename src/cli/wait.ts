import type { CanaryApp, Condition } from "../api/types.js";

/** The states `kubectl canaryapp wait --for` can wait on. */
export type WantedState = "healthy" | "failed";

/** Where an app stands for someone waiting on `want`. */
export type WaitVerdict =
  | { kind: "reached"; message: string }
  /** The app settled somewhere else: waiting longer cannot reach `want` without a new change. */
  | { kind: "other"; message: string }
  | { kind: "pending"; message: string };

/** The condition the reconciler sets when the API server rejects a child as invalid. */
const CHILDREN_APPLIED = "ChildrenApplied";

function condition(app: CanaryApp, type: string): Condition | undefined {
  return app.status?.conditions?.find((c) => c.type === type);
}

/**
 * Why spec.image failed, in one line a pipeline can print: the image, when, the reason, the metric and
 * its value, and the controller's message.
 */
export function failureReason(app: CanaryApp): string {
  const failed = app.status?.failedImages?.find((f) => f.image === app.spec.image);
  if (failed === undefined) return app.status?.message ?? `${app.spec.image} failed`;
  const metric = failed.metric !== undefined ? ` (${failed.metric}=${failed.value ?? "no data"})` : "";
  return `${failed.image} failed at ${failed.failedAt}: ${failed.reason}${metric}: ${failed.message}`;
}

/**
 * Judges the app against the wanted state. Only a status that has seen the current generation counts,
 * so a wait started right after a spec change never mistakes the previous release's state for the new one.
 */
export function judge(app: CanaryApp, want: WantedState): WaitVerdict {
  const status = app.status;
  const generation = app.metadata.generation ?? 0;
  if (status === undefined || (status.observedGeneration ?? 0) < generation) {
    return { kind: "pending", message: `waiting for the controller to observe generation ${generation}` };
  }
  const phase = status.phase ?? "Unknown";
  const rejected = condition(app, CHILDREN_APPLIED);
  if (rejected?.status === "False") {
    return { kind: "other", message: `a child was rejected: ${rejected.message}` };
  }
  if (phase === "Invalid") return { kind: "other", message: status.message ?? "the spec cannot be acted on" };
  const promoted = phase === "Healthy" && status.canary === undefined && status.primaryImage === app.spec.image;
  const failed = phase === "Failed";
  if (want === "healthy") {
    if (promoted) return { kind: "reached", message: `${app.spec.image} is healthy on the primary` };
    if (failed) return { kind: "other", message: failureReason(app) };
  } else {
    if (failed) return { kind: "reached", message: failureReason(app) };
    if (promoted) return { kind: "other", message: `${app.spec.image} was promoted` };
  }
  return { kind: "pending", message: `${phase}: ${status.message ?? ""}`.trim() };
}

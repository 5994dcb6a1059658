/**
 * `status.parents` of an HTTPRoute as a Gateway API implementation writes it (gateway.networking.k8s.io/v1): for
 * each parent, `Accepted` and `ResolvedRefs` of one generation. For tests and the integration tests' stand-in
 * implementation; which parent is accepted is the caller's say (`verdict`).
 */

/** What the implementation says of one parent: Accepted True, or False with its reason and message. */
export interface ParentVerdict {
  accepted: boolean;
  reason?: string;
  message?: string;
  /** ResolvedRefs False with this reason (BackendNotFound...); absent: True. */
  unresolved?: string;
}

export const ACCEPTED: ParentVerdict = { accepted: true };

export interface ReportOptions {
  generation: number;
  /** Default: every parent accepted. */
  verdict?: (parentRef: Record<string, unknown>) => ParentVerdict;
  controllerName?: string;
  /** lastTransitionTime of every condition. */
  at?: string;
}

export function parentStatuses(parentRefs: readonly unknown[], options: ReportOptions): unknown[] {
  const { generation, verdict = () => ACCEPTED } = options;
  const condition = (type: string, ok: boolean, reason: string, message = "") => ({
    type,
    status: ok ? "True" : "False",
    reason,
    message,
    observedGeneration: generation,
    lastTransitionTime: options.at ?? "2026-01-01T00:00:00Z",
  });
  return parentRefs.map((parentRef) => {
    const v = verdict(parentRef as Record<string, unknown>);
    return {
      parentRef,
      controllerName: options.controllerName ?? "istio.io/gateway-controller",
      conditions: [
        v.accepted ? condition("Accepted", true, "Accepted") : condition("Accepted", false, v.reason ?? "", v.message),
        v.unresolved === undefined
          ? condition("ResolvedRefs", true, "ResolvedRefs")
          : condition("ResolvedRefs", false, v.unresolved, v.message),
      ],
    };
  });
}

/** `route` at `generation`, with the status its implementation writes for it. */
export function reportedOn<T extends { metadata: object; spec: { parentRefs: readonly unknown[] } }>(
  route: T,
  options: ReportOptions,
): T & { metadata: { generation: number }; status: { parents: unknown[] } } {
  return {
    ...route,
    metadata: { ...route.metadata, generation: options.generation },
    status: { parents: parentStatuses(route.spec.parentRefs, options) },
  };
}

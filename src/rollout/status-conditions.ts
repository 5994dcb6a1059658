import type { CanaryState, Condition } from "../api/types.js";
import { CONDITION } from "../api/types.js";
import type { ConditionUpdate } from "./conditions.js";
import { ANALYSIS_READY, CHILD_REJECTED, CHILDREN_APPLIED, ROUTE_ACCEPTED, setCondition } from "./conditions.js";
import type { CanaryView, CapacityWait, PlanView } from "./context.js";
import type { WorkloadObservation } from "./types.js";
/** The Ready and Progressing reason while a batch release waits for approval. */
export const WAITING_FOR_APPROVAL = "WaitingForApproval";

/** What a running test is doing, in a few words, for the Progressing condition. */
function progressingMessage(canary: CanaryView): string {
  switch (canary.stage) {
    case "WaitingForSecondary":
    case "Stepping":
    case "AwaitingPromotion":
      return `testing ${canary.image}`;
    case "Promoting":
      return `promoting ${canary.image}`;
    case "Finalising":
      return `promoted ${canary.image}; removing the secondary`;
    case "RollingBack":
      return canary.outcome?.result === "Superseded"
        ? `ending the superseded test of ${canary.image}`
        : `rolling back ${canary.image}`;
  }
}

/** The gate a test is held at, while it is at one (a test moved on past it keeps the record). */
function heldAtGate(canary: CanaryView): NonNullable<CanaryState["gates"]>["waiting"] {
  const waiting = canary.gates?.waiting;
  const atGate = canary.stage === "WaitingForSecondary" || canary.stage === "AwaitingPromotion";
  return atGate ? waiting : undefined;
}

/** Ready as the primary workload is observed: missing, not available yet, or available. */
export function readyCondition(
  primary: WorkloadObservation | null,
  generation: number | undefined,
): ConditionUpdate & { observedGeneration?: number } {
  const gen = generation !== undefined ? { observedGeneration: generation } : {};
  if (primary === null) {
    return {
      type: CONDITION.Ready,
      status: "False",
      reason: "PrimaryMissing",
      message: "the primary Deployment does not exist yet",
      ...gen,
    };
  }
  if (!primary.available && primary.podsRefused !== undefined) {
    return {
      type: CONDITION.Ready,
      status: "False",
      reason: "PodsRefused",
      message: `the primary's pods cannot be created: ${primary.podsRefused}`,
      ...gen,
    };
  }
  return primary.available
    ? {
        type: CONDITION.Ready,
        status: "True",
        reason: "PrimaryAvailable",
        message: `the primary runs ${primary.image} and is available`,
        ...gen,
      }
    : {
        type: CONDITION.Ready,
        status: "False",
        reason: "PrimaryNotAvailable",
        message: `the primary (${primary.image}) is not available yet`,
        ...gen,
      };
}

/**
 * The conditions of the next status: Ready (the primary is available), Progressing (True while a test
 * runs, with its stage as reason; False with the reason the last test ended) and InvalidSpec.
 */
export function statusConditions(ctx: PlanView, overdue: boolean): Condition[] {
  const { status, observed, at } = ctx;
  const generation = ctx.app.metadata.generation;
  const gen = generation !== undefined ? { observedGeneration: generation } : {};
  let list: readonly Condition[] = status.conditions ?? [];

  const primary = observed.primary;
  list = setCondition(list, readyCondition(primary, generation), at);
  // A rejected child keeps the primary from running: Ready names the rejection rather than a delay.
  const rejected = primary?.available === true ? undefined : rejectedReady(list);
  if (rejected !== undefined) list = setCondition(list, { ...rejected, ...gen }, at);

  const canary = status.canary;
  // A batch release paused for a person says so where people look first (batch-release.ts).
  const approval = canary?.approval;
  if (approval !== undefined && rejected === undefined) {
    list = setCondition(
      list,
      {
        type: CONDITION.Ready,
        status: primary?.available === true ? "True" : "False",
        reason: WAITING_FOR_APPROVAL,
        message: `batch ${approval.batch} of ${canary?.image ?? ""} passed its analysis and waits for approval`,
        ...gen,
      },
      at,
    );
  }
  const previous = list.find((c) => c.type === CONDITION.Progressing);
  if (canary !== undefined) {
    const waiting = heldAtGate(canary);
    const capacity = canary.stage === "Stepping" ? ctx.capacityWait : undefined;
    const reason = overdue
      ? PROMOTION_OVERDUE
      : canary.approval !== undefined
        ? WAITING_FOR_APPROVAL
        : waiting !== undefined
          ? "WaitingForWebhook"
          : capacity !== undefined
            ? WAITING_FOR_CAPACITY
            : canary.stage;
    const message =
      waiting !== undefined
        ? `testing ${canary.image}; held by the ${waiting.type} webhook ${waiting.name}: ${waiting.message}`
        : capacity !== undefined
          ? `testing ${canary.image}; ${capacityMessage(capacity)}`
          : progressingMessage(canary);
    list = setCondition(list, { type: CONDITION.Progressing, status: "True", reason, message, ...gen }, at);
  } else if (ctx.ended !== undefined) {
    list = setCondition(
      list,
      { type: CONDITION.Progressing, status: "False", reason: ctx.ended.reason, message: ctx.ended.message, ...gen },
      at,
    );
  } else if (previous === undefined) {
    list = setCondition(
      list,
      { type: CONDITION.Progressing, status: "False", reason: "NoTest", message: "no test has run yet", ...gen },
      at,
    );
  } else if (previous.status === "True") {
    // A test vanished from status without ending here (status edited by hand): say so rather than keep True.
    list = setCondition(
      list,
      { type: CONDITION.Progressing, status: "False", reason: "NoTest", message: "no test is running", ...gen },
      at,
    );
  } else {
    list = setCondition(list, { ...previous, ...gen }, at);
  }

  list = setCondition(
    list,
    ctx.problems.length > 0
      ? {
          type: CONDITION.InvalidSpec,
          status: "True",
          reason:
            ctx.observed.analysisRefused?.reason ??
            (ctx.observed.analysisTemplates?.kind === "problem" ? ctx.observed.analysisTemplates.reason : undefined) ??
            "InvalidAnalysis",
          message: ctx.problems.join("; "),
          ...gen,
        }
      : { type: CONDITION.InvalidSpec, status: "False", reason: "Valid", message: "the spec can be acted on", ...gen },
    at,
  );
  return analysisReady(routeAccepted(list, ctx, at), ctx, at);
}

/**
 * AnalysisReady, on an app that uses analysis templates: whether they resolve now, and what a running test is
 * judged by (the metrics recorded when it started, ADR 0031).
 */
function analysisReady(list: readonly Condition[], ctx: PlanView, at: string): Condition[] {
  const resolution = ctx.observed.analysisTemplates;
  if (resolution === undefined) return list.filter((c) => c.type !== ANALYSIS_READY);
  const generation = ctx.app.metadata.generation;
  const gen = generation !== undefined ? { observedGeneration: generation } : {};
  const pinned = ctx.status.canary?.analysisTemplates;
  if (resolution.kind === "problem") {
    const goesOn =
      pinned !== undefined
        ? "; the running test goes on with the metrics recorded from its templates when it started"
        : "; no test starts until they resolve";
    const message = `${resolution.message}${goesOn}`;
    return setCondition(
      list,
      { type: ANALYSIS_READY, status: "False", reason: resolution.reason, message, ...gen },
      at,
    );
  }
  const names = resolution.templates.map((t) => `${t.kind}/${t.name}`).join(", ");
  const message = `the metrics of ${names} resolve${pinned !== undefined ? "; the running test is judged by those recorded when it started" : ""}`;
  return setCondition(list, { type: ANALYSIS_READY, status: "True", reason: "TemplatesResolved", message, ...gen }, at);
}

/**
 * RouteAccepted, where the route's implementation reports on it (the Gateway API): True while it carries the
 * route as written, False with the implementation's reason and message; absent for routers that report
 * nothing (Istio's VirtualService), and removed when an app moves to one.
 */
function routeAccepted(list: readonly Condition[], ctx: PlanView, at: string): Condition[] {
  const { observed } = ctx;
  const generation = ctx.app.metadata.generation;
  const gen = generation !== undefined ? { observedGeneration: generation } : {};
  const notCarried = observed.routeNotCarried;
  if (notCarried !== undefined) {
    return setCondition(
      list,
      { type: ROUTE_ACCEPTED, status: "False", reason: notCarried.reason, message: notCarried.message, ...gen },
      at,
    );
  }
  if (observed.routeCarried === true) {
    const message = "the route's implementation reports it accepted by every parent, its references resolved";
    return setCondition(list, { type: ROUTE_ACCEPTED, status: "True", reason: "Accepted", message, ...gen }, at);
  }
  return list.filter((c) => c.type !== ROUTE_ACCEPTED);
}

/** The reason of the Progressing condition while a promotion's primary rollout is overdue. */
export const PROMOTION_OVERDUE = "ProgressDeadlineExceeded";

/** The Progressing reason while a step waits for the next step's pods (spec.scaling: weighted). */
export const WAITING_FOR_CAPACITY = "WaitingForCapacity";

/** What a step waiting for capacity waits for, in words. */
export function capacityMessage(wait: CapacityWait): string {
  return `waiting for ${wait.needed} secondary pods Available before ${wait.weight}% (${wait.available} of ${wait.needed} so far)`;
}

/**
 * What Ready says while the last apply was rejected and the primary is not available: the rejection (it
 * names the child and the API server's reason), not "does not exist yet", which would send the reader
 * looking for a delay instead of an obstacle. Undefined when no child was rejected.
 */
export function rejectedReady(conditions: readonly Condition[] | undefined): ConditionUpdate | undefined {
  const applied = conditions?.find((c) => c.type === CHILDREN_APPLIED);
  if (applied?.status !== "False") return undefined;
  return {
    type: CONDITION.Ready,
    status: "False",
    reason: CHILD_REJECTED,
    message: `the primary cannot run as specified: a child could not be applied: ${applied.message}`,
  };
}

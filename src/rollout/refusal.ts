import { CONDITION } from "../api/types.js";
import { ANALYSIS_READY, findCondition } from "./conditions.js";
import type { PlanContext } from "./context.js";
import { emit } from "./context.js";

/**
 * Says once, as a Warning Event, that the controller refuses to query the app's Prometheus (the refusal
 * becomes the InvalidSpec condition too): again only when the reason or message changes, so a replayed
 * plan says nothing new.
 */
export function announceRefusal(ctx: PlanContext): void {
  const refused = ctx.observed.analysisRefused;
  if (refused === undefined) return;
  const previous = findCondition(ctx.previous.conditions, CONDITION.InvalidSpec);
  const said =
    previous?.status === "True" && previous.reason === refused.reason && previous.message.includes(refused.message);
  if (!said) emit(ctx, "Warning", refused.reason, refused.message);
}

/**
 * Says once, as a Warning Event, why the app's analysis templates do not resolve (ADR 0031); again only when
 * the reason or the problem changes, as AnalysisReady shows it.
 */
export function announceTemplateProblem(ctx: PlanContext): void {
  const resolution = ctx.observed.analysisTemplates;
  if (resolution?.kind !== "problem") return;
  const previous = findCondition(ctx.previous.conditions, ANALYSIS_READY);
  const said =
    previous?.status === "False" &&
    previous.reason === resolution.reason &&
    previous.message.startsWith(resolution.message);
  if (!said) emit(ctx, "Warning", resolution.reason, resolution.message);
}

/**
 * What a test is of, and what is promoted: the whole pod-template revision (the image and the rest of the
 * template, see PodTemplateParts), and the digest the secondary's pods actually ran.
 */
import type { CanaryState, PodTemplateParts, PrimaryRecord } from "../api/types.js";
import type { CanaryView, PlanView } from "./context.js";
import type { ReadonlyDeep } from "type-fest";
import type { ObservedDigest } from "./decisions.js";
import type { RevisionRef } from "../identity/failed-images.js";
import { digestOfImageID, pinImage } from "../identity/image-ref.js";
import { describeChanges, revisionOf, sameSettings, settingsRevisionOf, templateOf } from "../identity/revision.js";
import type { Observation } from "./types.js";

/** The template parts spec asks for. */
export function specTemplate(ctx: PlanView): PodTemplateParts {
  return templateOf(ctx.spec);
}

/** A record of the primary running `image` with `template`. */
export function primaryRecord(image: string, template: ReadonlyDeep<PodTemplateParts>, digest?: string): PrimaryRecord {
  return {
    image,
    ...(digest !== undefined ? { digest } : {}),
    revision: revisionOf(image, template),
    // A deep copy: the record is the status's own.
    template: structuredClone(template) as PodTemplateParts,
  };
}

/** The template the primary runs (spec's, for a status from before it was recorded). */
export function primaryTemplate(ctx: PlanView): ReadonlyDeep<PodTemplateParts> {
  return ctx.status.primary?.template ?? specTemplate(ctx);
}

/** The template a test runs on the secondary: its own when it changed more than the image, else the primary's. */
export function testedTemplate(ctx: PlanView, canary: CanaryView): ReadonlyDeep<PodTemplateParts> {
  return canary.template ?? primaryTemplate(ctx);
}

/** The revision the secondary's workload shows while it runs this test. */
export function secondaryRevision(ctx: PlanView, canary: CanaryView): string {
  return revisionOf(canary.image, testedTemplate(ctx, canary));
}

/** spec no longer asks for the template under test (besides the image). */
export function templateChanged(ctx: PlanView, canary: CanaryView): boolean {
  return !sameSettings(testedTemplate(ctx, canary), specTemplate(ctx));
}

/** What spec asks for, as failures are looked up. */
export function specRevisionRef(ctx: PlanView): RevisionRef {
  return { image: ctx.spec.image, settingsRevision: settingsRevisionOf(specTemplate(ctx)) };
}

/** spec asks for exactly what the primary runs. */
export function specIsPrimary(ctx: PlanView): boolean {
  const primary = ctx.status.primary;
  if (primary === undefined) return ctx.spec.image === ctx.status.primaryImage;
  return revisionOf(ctx.spec.image, specTemplate(ctx)) === primary.revision;
}

/** The new test's template fields, when spec's template differs from the primary's beyond the image. */
export function testTemplateFields(ctx: PlanView): Pick<CanaryState, "revision" | "template" | "changes"> {
  const wanted = specTemplate(ctx);
  const running = primaryTemplate(ctx);
  if (sameSettings(wanted, running)) return {};
  return {
    revision: revisionOf(ctx.spec.image, wanted),
    template: structuredClone(wanted),
    changes: describeChanges(running, wanted),
  };
}

/** The image a track's workload is given: the reference pinned to its digest when one is known. */
export function deployedImage(image: string, digest: string | undefined): string {
  return digest === undefined ? image : pinImage(image, digest);
}

/** The image the primary Deployment carries now (status.primary's pin, or the primary image as named). */
export function primaryDeployedImage(ctx: PlanView): string {
  const image = ctx.status.primaryImage ?? ctx.spec.image;
  const primary = ctx.status.primary;
  return primary !== undefined && primary.image === image ? deployedImage(image, primary.digest) : image;
}

/**
 * The digest the secondary's ready pods of `image` ran: one when all that report one agree, `mixed` when
 * they do not, `unknown` when no ready pod reports one (none observed, or an empty imageID).
 */
export function observedDigest(observed: Pick<Observation, "secondaryPods">, image: string): ObservedDigest {
  const digests = new Set<string>();
  for (const pod of observed.secondaryPods ?? []) {
    if (!pod.ready || pod.image !== image) continue;
    const digest = digestOfImageID(pod.imageID);
    if (digest !== undefined) digests.add(digest);
  }
  const list = [...digests].sort();
  if (list.length === 0) return { kind: "unknown" };
  if (list.length === 1) return { kind: "one", digest: list[0] ?? "" };
  return { kind: "mixed", digests: list };
}

import type { FailedImage } from "../api/types.js";
import { MAX_FAILED_IMAGES } from "../api/types.js";
import { sameImage } from "./image-ref.js";

/**
 * What a failure is compared with: an image reference, and, when the revision changed more than the image,
 * the revision of the rest of its template (`settingsRevision`). A record without `settingsRevision` is an
 * image-only failure (it failed with the primary's template) and matches the image whatever else the
 * template holds, as it always did; one with it matches only that template.
 */
export interface RevisionRef {
  image: string;
  /** The digest the reference is known to run, e.g. from the pods under test. */
  digest?: string;
  /** The revision of the template besides the image (see settingsRevisionOf). */
  settingsRevision?: string;
}

function matches(entry: FailedImage, ref: RevisionRef): boolean {
  if (!sameImage(entry.image, ref.image, { a: entry.digest, b: ref.digest })) return false;
  return entry.settingsRevision === undefined || entry.settingsRevision === ref.settingsRevision;
}

function sameRecord(a: FailedImage, b: FailedImage): boolean {
  return sameImage(a.image, b.image, { a: a.digest, b: b.digest }) && a.settingsRevision === b.settingsRevision;
}

function asRef(ref: string | RevisionRef): RevisionRef {
  return typeof ref === "string" ? { image: ref } : ref;
}

/**
 * The record of a failed revision, if it failed: the same image by any name (`app:v3`,
 * `docker.io/library/app:v3`, `app@sha256:…` of the same build) with the same rest of the template.
 */
export function findFailedImage(
  list: readonly FailedImage[] | undefined,
  ref: string | RevisionRef,
): FailedImage | undefined {
  const wanted = asRef(ref);
  return list?.find((entry) => matches(entry, wanted));
}

/** The list with `entry` first, any older entry for the same revision dropped, bounded to the newest few. */
export function recordFailedImage(list: readonly FailedImage[] | undefined, entry: FailedImage): FailedImage[] {
  const rest = (list ?? []).filter((old) => !sameRecord(old, entry));
  return [entry, ...rest].slice(0, MAX_FAILED_IMAGES);
}

/**
 * The list without what `retry` names: an image (every failed revision of it, by any name of the same build)
 * or one revision (as status.failedImages[].revision shows it).
 */
export function forgetFailedImage(list: readonly FailedImage[] | undefined, retry: string): FailedImage[] {
  return (list ?? []).filter(
    (entry) => entry.revision !== retry && !sameImage(entry.image, retry, { a: entry.digest }),
  );
}

/** Whether `retry` names a recorded failure (see forgetFailedImage). */
export function retryMatches(list: readonly FailedImage[] | undefined, retry: string): boolean {
  return forgetFailedImage(list, retry).length !== (list ?? []).length;
}

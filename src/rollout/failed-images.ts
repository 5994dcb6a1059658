import type { FailedImage } from "../api/types.js";
import { MAX_FAILED_IMAGES } from "../api/types.js";

/** The record of a failed image, if it failed. */
export function findFailedImage(list: readonly FailedImage[] | undefined, image: string): FailedImage | undefined {
  return list?.find((entry) => entry.image === image);
}

/** The list with `entry` first, any older entry for the same image dropped, bounded to the newest few. */
export function recordFailedImage(list: readonly FailedImage[] | undefined, entry: FailedImage): FailedImage[] {
  const rest = (list ?? []).filter((old) => old.image !== entry.image);
  return [entry, ...rest].slice(0, MAX_FAILED_IMAGES);
}

/** The list without `image`. */
export function forgetFailedImage(list: readonly FailedImage[] | undefined, image: string): FailedImage[] {
  return (list ?? []).filter((entry) => entry.image !== image);
}

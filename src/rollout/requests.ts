import { ANNOTATIONS } from "../api/types.js";

/** The manual controls present on a CanaryApp (see ANNOTATIONS). */
export interface Requests {
  /** `paused` is a level: the test holds while it is present with a truthy value. */
  paused: boolean;
  promote: boolean;
  abort: boolean;
  /** The image to forget from failedImages; an empty value means spec.image. */
  retry: string | undefined;
}

const FALSY = new Set(["", "false", "0", "no", "off"]);

/** An annotation value that means "yes": anything but empty, false, 0, no or off (any case). */
export function isTruthy(value: string | undefined): boolean {
  return value !== undefined && !FALSY.has(value.trim().toLowerCase());
}

/** Reads the manual controls; promote and abort count whatever their value, as they are one-shot requests. */
export function readRequests(annotations: Record<string, string> | undefined, specImage: string): Requests {
  const a = annotations ?? {};
  const retry = a[ANNOTATIONS.retry];
  return {
    paused: isTruthy(a[ANNOTATIONS.paused]),
    promote: ANNOTATIONS.promote in a,
    abort: ANNOTATIONS.abort in a,
    retry: retry === undefined ? undefined : retry.trim() === "" ? specImage : retry.trim(),
  };
}

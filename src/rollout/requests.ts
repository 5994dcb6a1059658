import { ANNOTATIONS } from "../api/types.js";

/** A manual control whose value is not one of its documented ones. */
export interface InvalidRequest {
  annotation: string;
  value: string;
  /** What the annotation accepts, for the Warning that answers it. */
  accepted: string;
}

/** The manual controls present on a CanaryApp (see ANNOTATIONS). */
export interface Requests {
  /**
   * `paused` is a level: the test holds while it is `true`; `false` or no annotation lets it run. Undefined when
   * the value is not understood: the test stays as it is (held or running) until the value is fixed.
   */
  paused: boolean | undefined;
  /** `promote=now`. */
  promote: boolean;
  /** `abort=now`. */
  abort: boolean;
  /** `approve=now`: a batch release waiting after a batch goes on to the next. */
  approve: boolean;
  /** The image to forget from failedImages; an empty value means spec.image. */
  retry: string | undefined;
  /** Controls present with a value they do not accept: answered with a Warning, never acted on. */
  invalid: InvalidRequest[];
}

/** The values each control accepts (compared trimmed, in any case). */
export const ACCEPTED_VALUES = {
  [ANNOTATIONS.paused]: ["true", "false"],
  [ANNOTATIONS.promote]: ["now"],
  [ANNOTATIONS.abort]: ["now"],
  [ANNOTATIONS.approve]: ["now"],
} as const;

/**
 * Reads the manual controls. Each means exactly what the README says: `paused=true|false`, `promote=now`,
 * `abort=now`, `retry=IMAGE`; anything else (`abort=false`, `promote=yes`) is not acted on and is listed in
 * `invalid`.
 */
export function readRequests(annotations: Record<string, string> | undefined, specImage: string): Requests {
  const a = annotations ?? {};
  const invalid: InvalidRequest[] = [];
  const read = (annotation: keyof typeof ACCEPTED_VALUES): string | null | undefined => {
    const raw = a[annotation];
    if (raw === undefined) return undefined;
    const accepted: readonly string[] = ACCEPTED_VALUES[annotation];
    const value = raw.trim().toLowerCase();
    if (accepted.includes(value)) return value;
    invalid.push({ annotation, value: raw, accepted: accepted.join(" or ") });
    return null;
  };
  const paused = read(ANNOTATIONS.paused);
  const retry = a[ANNOTATIONS.retry];
  return {
    paused: paused === null ? undefined : paused === "true",
    promote: read(ANNOTATIONS.promote) === "now",
    abort: read(ANNOTATIONS.abort) === "now",
    approve: read(ANNOTATIONS.approve) === "now",
    retry: retry === undefined ? undefined : retry.trim() === "" ? specImage : retry.trim(),
    invalid,
  };
}

import type { CanaryApp } from "../api/types.js";
import { ANNOTATIONS } from "../api/types.js";

/** The manual controls the plugin offers; each is one annotation, exactly as in the README's table. */
export type Control = "promote" | "abort" | "retry" | "pause" | "resume" | "approve";

/** Annotation values to set (a string) or remove (null), as a JSON merge patch of metadata.annotations takes them. */
export type AnnotationPatch = Record<string, string | null>;

/**
 * The annotations a control sets. `retry` names the image to forget as failed; without one it is the app's
 * spec.image (the controller reads an empty value the same way, but a named image says what was meant).
 */
export function controlAnnotations(control: Control, app: CanaryApp, retryImage?: string): AnnotationPatch {
  switch (control) {
    case "promote":
      return { [ANNOTATIONS.promote]: "now" };
    case "abort":
      return { [ANNOTATIONS.abort]: "now" };
    case "retry":
      return { [ANNOTATIONS.retry]: retryImage ?? app.spec.image };
    case "pause":
      return { [ANNOTATIONS.paused]: "true" };
    case "resume":
      return { [ANNOTATIONS.paused]: null };
    case "approve":
      return { [ANNOTATIONS.approve]: "now" };
  }
}

/** What kubectl prints after a change, e.g. `canaryapp.canaryapp.io/demo promoted`. */
export function controlVerb(control: Control): string {
  switch (control) {
    case "promote":
      return "promoted";
    case "abort":
      return "aborted";
    case "retry":
      return "retried";
    case "pause":
      return "paused";
    case "resume":
      return "resumed";
    case "approve":
      return "approved";
  }
}

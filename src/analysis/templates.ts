import type { ResolvedSpec } from "../api/defaults.js";
import { InvalidSpecError } from "../api/errors.js";
import type { CanaryApp, CanaryState } from "../api/types.js";
import { childNames } from "../api/meta.js";
import { later } from "../time/timestamps.js";

/** The values a query template may use, as `{{name}}`. */
export interface TemplateVars {
  /** The CanaryApp's name. */
  name: string;
  namespace: string;
  /** The primary Deployment (and Istio workload): `<name>-primary`. */
  primary: string;
  /** The secondary Deployment (and Istio workload): `<name>-secondary`. */
  secondary: string;
  /** The Service every route points at: `<name>`. */
  service: string;
  /** The range of the built-in rate() windows, as a Prometheus duration such as "30s". */
  interval: string;
  /**
   * The time since the current step began (its weight took effect), as a Prometheus duration in whole
   * seconds such as "37s": a window that covers this step's traffic and nothing before it. Before the
   * first step it is the analysis interval's window.
   */
  stepWindow: string;
  /** When the current step began, as a Unix time in seconds (for `@ {{stepStart}}` or `time() - {{stepStart}}`). */
  stepStart: string;
  /**
   * Istio's canonical revision of the primary's pods (`destination_canonical_revision`): `primary` for a
   * Deployment, the revision of the primary's pod template for a StatefulSet (ADR 0023).
   */
  primaryRevision: string;
  /** The secondary's: `secondary` for a Deployment, the revision under test for a StatefulSet. */
  secondaryRevision: string;
  /**
   * The track a query measures: `secondary`, except in a judged metric's query for the primary (ADR 0030),
   * which is run once for each track.
   */
  track: "primary" | "secondary";
  /** That track's workload (Deployment): `{{secondary}}` or `{{primary}}`. */
  workload: string;
  /** That track's canonical revision: `{{secondaryRevision}}` or `{{primaryRevision}}`. */
  revision: string;
}

/** The variables that name a track, so that one query measures either (a judged metric's). */
export const TRACK_VARIABLES: readonly (keyof TemplateVars)[] = ["track", "workload", "revision"];

/** The variables of `vars` set for `track`. */
export function forTrack(vars: TemplateVars, track: "primary" | "secondary"): TemplateVars {
  return track === "primary"
    ? { ...vars, track, workload: vars.primary, revision: vars.primaryRevision }
    : { ...vars, track, workload: vars.secondary, revision: vars.secondaryRevision };
}

/** Every variable a template may name; anything else is a spec error. */
export const TEMPLATE_VARIABLES: readonly (keyof TemplateVars)[] = [
  "name",
  "namespace",
  "primary",
  "secondary",
  "service",
  "interval",
  "stepWindow",
  "stepStart",
  "primaryRevision",
  "secondaryRevision",
  "track",
  "workload",
  "revision",
];

/**
 * The shortest rate() window the templates get. rate() needs two samples inside its window, so the window
 * must span at least two scrapes: 10s holds two samples for any scrape interval up to 5s. With Prometheus'
 * usual 15s (or 1m default) scrape, set `analysis.interval` to at least twice the scrape interval, or the
 * built-in metrics find no data and the step fails ("NoData": missing data never promotes).
 * The window is otherwise exactly the analysis interval: it then covers the current step only, and not the
 * traffic of an earlier test whose pods carried the same workload name.
 */
export const MIN_QUERY_WINDOW_SECONDS = 10;

/**
 * The requests of one track as Istio reports them where the track's pods receive them: by canonical service
 * and revision, which every workload kind carries (a StatefulSet reports both tracks as one workload,
 * `<name>`, so `destination_workload` cannot tell them apart; the Service a request is reported against
 * is the per-track one, never `<name>`: docs/istio-telemetry.md, ADR 0023).
 */
export function trackSelector(track: "primary" | "secondary"): string {
  return `reporter="destination",destination_workload_namespace="{{namespace}}",destination_canonical_service="{{name}}",destination_canonical_revision="{{${track}Revision}}"`;
}

const SECONDARY = trackSelector("secondary");

/** Built-in Istio standard metrics, measured where the secondary's sidecar receives requests. */
export const BUILTIN_QUERIES = {
  /** Percentage of requests to the secondary that did not answer 5xx. */
  // No series without a 5xx when every request failed: that is 0 %, not "no data" (the denominator still
  // has none when there were no requests at all).
  "request-success-rate": `(sum(rate(istio_requests_total{${SECONDARY},response_code!~"5.*"}[{{interval}}])) or on() vector(0)) / sum(rate(istio_requests_total{${SECONDARY}}[{{interval}}])) * 100`,
  /** 99th percentile of the secondary's request duration, in milliseconds. */
  "request-duration": `histogram_quantile(0.99, sum(rate(istio_request_duration_milliseconds_bucket{${SECONDARY}}[{{interval}}])) by (le))`,
} as const;

/**
 * Requests the secondary served during the current step: the evidence without which no step passes.
 * Measured where the secondary's sidecar receives them, whatever they answered.
 */
export const TRAFFIC_QUERY = `sum(increase(istio_requests_total{${SECONDARY}}[{{stepWindow}}]))`;

/** A query template names a variable that does not exist: the spec is invalid (shown, not retried). */
export class TemplateError extends InvalidSpecError {
  constructor(message: string) {
    super(message);
    this.name = "TemplateError";
  }
}

const PLACEHOLDER = /\{\{(.*?)\}\}/g;

function isVariable(name: string): name is keyof TemplateVars {
  return (TEMPLATE_VARIABLES as readonly string[]).includes(name);
}

/** The placeholders of a template that are not known variables (spaces inside the braces are allowed). */
export function unknownTemplateVariables(template: string): string[] {
  const unknown: string[] = [];
  for (const match of template.matchAll(PLACEHOLDER)) {
    const name = (match[1] ?? "").trim();
    if (!isVariable(name) && !unknown.includes(name)) unknown.push(name);
  }
  return unknown;
}

/** Substitutes `{{variable}}` placeholders; throws a TemplateError naming any unknown variable. */
export function renderQuery(template: string, vars: TemplateVars): string {
  const unknown = unknownTemplateVariables(template);
  if (unknown.length > 0) {
    const names = unknown.map((name) => `{{${name}}}`).join(", ");
    throw new TemplateError(
      `unknown template variable ${names} in query; known: ${TEMPLATE_VARIABLES.map((v) => `{{${v}}}`).join(" ")}`,
    );
  }
  return template.replace(PLACEHOLDER, (_whole, name: string) => vars[name.trim() as keyof TemplateVars]);
}

/** The Prometheus range for an analysis interval: the interval in whole seconds, at least the minimum window. */
export function queryWindow(intervalSeconds: number): string {
  return `${Math.ceil(Math.max(intervalSeconds, MIN_QUERY_WINDOW_SECONDS))}s`;
}

/**
 * The window of `{{stepWindow}}`: whole seconds (rounded up, at least 1) from `since` to `now`; the
 * analysis interval's window when either is unknown or unreadable.
 */
export function stepWindow(since: string | undefined, now: Date | undefined, intervalSeconds: number): string {
  const start = since === undefined ? NaN : Date.parse(since);
  if (now === undefined || Number.isNaN(start)) return queryWindow(intervalSeconds);
  return `${Math.max(1, Math.ceil((now.getTime() - start) / 1000))}s`;
}

/**
 * The template values for one CanaryApp at `now` (the step variables need it; without it they describe a
 * window of one interval ending now) and its tracks' canonical revisions (`revisions`, from the plan;
 * without them a StatefulSet's are empty: only a notification's URL is rendered so).
 */
export function templateVars(
  app: CanaryApp,
  spec: ResolvedSpec,
  now?: Date,
  revisions?: Record<"primary" | "secondary", string>,
): TemplateVars {
  const name = app.metadata.name ?? "";
  const names = childNames(name);
  const canary = app.status?.canary;
  const began = canary === undefined ? undefined : stepWindowStart(canary);
  const window = stepWindow(began, now, spec.analysis.intervalSeconds);
  const end = now?.getTime() ?? 0;
  const beganMs = began === undefined ? NaN : Date.parse(began);
  const startMs = Number.isNaN(beganMs) ? end - spec.analysis.intervalSeconds * 1000 : beganMs;
  const vars = {
    name,
    namespace: app.metadata.namespace ?? "default",
    primary: names.primary,
    secondary: names.secondary,
    service: names.service,
    interval: queryWindow(spec.analysis.intervalSeconds),
    stepWindow: window,
    stepStart: String(Math.floor(startMs / 1000)),
    ...(revisions === undefined
      ? defaultRevisions(spec)
      : { primaryRevision: revisions.primary, secondaryRevision: revisions.secondary }),
  };
  return forTrack({ ...vars, track: "secondary", workload: "", revision: "" }, "secondary");
}

/**
 * Where `{{stepWindow}}` begins: when the step's weight began to apply (`stepBeganAt`), or, when the route
 * was observed carrying it later than that (a controller that died before applying it), that moment: the
 * window then covers only traffic at the step's weight.
 */
function stepWindowStart(canary: CanaryState): string {
  const began = canary.stepBeganAt ?? canary.stepStartedAt;
  return canary.stepRoutedAt === undefined ? began : later(began, canary.stepRoutedAt);
}

/** The canonical revisions when the plan does not give them: a Deployment's are its track names. */
function defaultRevisions(spec: ResolvedSpec): Record<"primaryRevision" | "secondaryRevision", string> {
  return spec.workload.kind === "StatefulSet"
    ? { primaryRevision: "", secondaryRevision: "" }
    : { primaryRevision: "primary", secondaryRevision: "secondary" };
}

/**
 * What the dashboard's page shows, as the server sends it by server-sent events: plain JSON, computed from the
 * CanaryApps and their Events by view-model.ts. The page (src/dashboard/page/) imports only these types (and
 * the API types they name), so that nothing of the server is bundled into it.
 */
import type { FailedImage } from "../api/types.js";

/** The plugin's controls (src/cli/controls.ts), each one annotation on the CanaryApp. */
export type ControlName = "promote" | "abort" | "retry" | "pause" | "resume" | "approve";

/** The weights the controller routes by (status.weights). */
export interface WeightsView {
  primary: number;
  secondary: number;
  /** The mirror phase: the share of traffic copied to the secondary. */
  mirror?: number;
  /** The A/B phase: requests matching spec.analysis.match go to the secondary. */
  match?: boolean;
}

/** One step of a test: its weight (or phase) and whether it is behind, at, or ahead of the test. */
export interface StepView {
  label: string;
  state: "done" | "current" | "pending";
}

/** One app in the overview. */
export interface AppSummary {
  /** `namespace/name`. */
  key: string;
  namespace: string;
  name: string;
  /** status.phase, or "Unknown" before the controller has written any. */
  phase: string;
  /** spec.image: what the user asked for. */
  image: string;
  /** The image the primary runs. */
  primaryImage?: string;
  /** The image under test, with its stage. */
  canary?: { image: string; stage: string; paused: boolean; startedAt: string };
  message?: string;
  weights?: WeightsView;
  /** The steps of the test (empty when none runs, or for a batch release: see `batch`). */
  steps: StepView[];
  /** `step 2 of 5`, `batch 1/2 paused`, or "" when no test runs. */
  progress: string;
  /** The controls that make sense now (the server accepts any, as the plugin does). */
  controls: ControlName[];
}

/** One metric of an analysis, with the bounds it was judged by. */
export interface MetricView {
  name: string;
  kind?: string;
  value?: number;
  min?: number;
  max?: number;
  passed: boolean;
  reason: string;
  rule?: string;
  message?: string;
  query?: string;
  window?: string;
  /** What a judged metric's verdict stands on (ADR 0030): samples, medians, U, p, α, the shift and its interval. */
  figures?: Record<string, number>;
}

export interface AnalysisView {
  time: string;
  verdict: string;
  metrics: MetricView[];
}

export interface GatesView {
  passed: string[];
  waiting?: { type: string; name: string; message: string; since: string };
}

export interface BatchView {
  summary: string;
  batches: { batch: number; replicas: number; state: string }[];
  rollback?: { state: string; reason?: string };
  /** The batch that waits for approval, and since when. */
  approval?: { batch: number; since: string };
}

/** A failed image as the page shows it: its `query` is the one that judged it as run, else the spec's. */
export type FailedImageView = Pick<
  FailedImage,
  "image" | "failedAt" | "reason" | "message" | "metric" | "value" | "query"
>;

export interface EventView {
  type: string;
  reason: string;
  message: string;
  /** ISO time of its last occurrence. */
  time: string;
  count: number;
}

export interface ConditionView {
  type: string;
  status: string;
  reason: string;
  message: string;
}

/** The weights at one moment the dashboard saw them change (ms since the epoch). */
export interface WeightPoint {
  t: number;
  primary: number;
  secondary: number;
}

/** The values of one analysis the dashboard saw, by metric name. */
export interface AnalysisPoint {
  t: number;
  values: Record<string, number | null>;
}

/** Everything the app page shows. */
export interface AppDetail extends AppSummary {
  /** Why the last test ended (while it rolls back or finalises). */
  outcome?: { result: string; reason: string; message: string };
  analysis?: AnalysisView;
  gates?: GatesView;
  batch?: BatchView;
  failedImages: FailedImageView[];
  conditions: ConditionView[];
  /** The newest last. */
  events: EventView[];
  weightHistory: WeightPoint[];
  analysisHistory: AnalysisPoint[];
}

/** What the page cannot be shown, e.g. `canaryapps.canaryapp.io is forbidden: ...` (a 403 on a list). */
export interface Problem {
  resource: string;
  message: string;
}

/** The first message of a stream. */
export interface Hello {
  readOnly: boolean;
  /** `namespace shop`, or `all namespaces`. */
  scope: string;
  context: string;
}

/** The messages of the stream, by SSE event name. */
export interface StreamMessages {
  hello: Hello;
  /** Every app, sent first and after a reconnect. */
  apps: AppSummary[];
  /** Apps that changed since the last message. */
  changed: AppSummary[];
  /** Keys of apps that are gone. */
  removed: string[];
  /** The app the stream was opened for (`?app=ns/name`); null while it does not exist (or is not readable). */
  detail: AppDetail | null;
  /** Whether the watches have loaded, and what they cannot read. */
  status: { synced: boolean; problems: Problem[] };
}

/** The body of a control request (POST /api/apps/NAMESPACE/NAME/CONTROL). */
export interface ControlRequest {
  /** retry: the failed image to test again (default: spec.image). */
  image?: string;
}

import type { CanaryApp } from "../api/types.js";
import type { AnalysisCheck } from "../rollout/checks.js";
import type { QueryOutcome } from "../rollout/types.js";
import { postJson } from "../webhooks/post.js";
import type { AnalysisProvider } from "./analysis-provider.js";
import { shortText } from "./prometheus.js";
import { STATUS_MESSAGE_MAX } from "./prometheus-analysis.js";

/** What a webhook check is sent: the app, where its test stands, and the spec's metadata. */
export interface WebhookPayload {
  app: string;
  namespace: string;
  /** The webhook's type: when in the test it is called. */
  type: string;
  /** The app's phase (Progressing, Promoting…). */
  phase: string;
  /** The stage of the test (WaitingForSecondary, Stepping, AwaitingPromotion…). */
  stage: string | undefined;
  images: { primary: string | undefined; secondary: string | undefined };
  weights: { primary: number; secondary: number };
  metadata: Record<string, string>;
}

/** The payload of one webhook check for `app` as its status stands. */
export function webhookPayload(app: CanaryApp, check: AnalysisCheck): WebhookPayload {
  const status = app.status ?? {};
  return {
    app: app.metadata.name ?? "",
    namespace: app.metadata.namespace ?? "",
    type: check.webhook?.type ?? "rollout",
    phase: status.phase ?? "Progressing",
    stage: status.canary?.stage,
    images: { primary: status.primaryImage, secondary: status.canary?.image },
    weights: status.weights ?? { primary: 100, secondary: 0 },
    metadata: check.webhook?.metadata ?? {},
  };
}

export interface WebhookAnalysisOptions {
  /** Whether the controller may call `url` (its URL policy). */
  allowsUrl(url: string): boolean;
}

/**
 * Webhooks as the AnalysisProvider: each check is a POST of the payload to its URL, with its own timeout and
 * retries; the outcome is the status it answered with (scored as "webhook", 2xx passes), or an error when
 * no attempt got an answer or the URL is outside the controller's policy.
 */
export function webhookAnalysis(options: WebhookAnalysisOptions): AnalysisProvider {
  return {
    run: (app, checks) => Promise.all(checks.map((check) => callWebhook(app, check, options))),
  };
}

async function callWebhook(
  app: CanaryApp,
  check: AnalysisCheck,
  options: WebhookAnalysisOptions,
): Promise<QueryOutcome> {
  const call = check.webhook;
  if (call === undefined) return { kind: "error", message: `${check.name} is not a webhook` };
  if (!options.allowsUrl(check.query)) {
    return { kind: "error", message: `${check.query} is not allowed by the controller's URL policy` };
  }
  try {
    const answer = await postJson(check.query, webhookPayload(app, check), {
      timeoutSeconds: call.timeoutSeconds,
      retries: call.retries,
    });
    return { kind: "value", value: answer.status };
  } catch (error) {
    const message =
      error instanceof Error
        ? error.cause instanceof Error
          ? `${error.message}: ${error.cause.message}`
          : error.message
        : String(error);
    return { kind: "error", message: shortText(message, STATUS_MESSAGE_MAX) };
  }
}

/** Why the app's webhooks may not be called (one is outside the controller's URL policy), or undefined. */
export function webhookRefusal(
  app: CanaryApp,
  allowsUrl: (url: string) => boolean,
): { reason: string; message: string } | undefined {
  const refused = (app.spec.analysis?.webhooks ?? []).filter((w) => !allowsUrl(w.url));
  if (refused.length === 0) return undefined;
  const names = refused.map((w) => `${w.name} (${w.url})`).join(", ");
  return {
    reason: "WebhookURLNotAllowed",
    message: `webhook ${names} is not allowed by the controller's URL policy (--prometheus-url-policy)`,
  };
}

/** The longest a call of the app's webhooks may take: every attempt timing out. */
export function webhookDeadlineMs(app: CanaryApp, defaultTimeoutSeconds: number): number {
  let longest = 0;
  for (const w of app.spec.analysis?.webhooks ?? []) {
    const attempts = (w.retries ?? 0) + 1;
    // Each retry waits 200 ms, twice as long as the one before.
    const waits = 200 * (2 ** (attempts - 1) - 1);
    longest = Math.max(longest, attempts * (w.timeoutSeconds ?? defaultTimeoutSeconds) * 1000 + waits);
  }
  return longest;
}

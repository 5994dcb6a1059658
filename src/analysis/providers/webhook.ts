/**
 * The webhook provider: each `webhook` check is a POST (webhooks/post.ts) to a URL the webhook policy allows
 * (webhook-destinations.ts), paced by the per-app rate limit (webhooks/rate-limit.ts).
 */
import type { CanaryApp } from "../../api/types.js";
import type { AnalysisCheck } from "../checks.js";
import type { QueryOutcome } from "../outcome.js";
import { objectKey } from "../../object-keys.js";
import { renderedWebhookUrl, webhookSubject, type WebhookDestinations } from "./webhook-destinations.js";
import { bodyBytes, MAX_REQUEST_BODY_BYTES, postJson } from "../../webhooks/post.js";
import type { PostLimiter } from "../../webhooks/rate-limit.js";
import type { AnalysisProvider } from "./analysis-provider.js";
import { shortText, STATUS_MESSAGE_MAX } from "./message-text.js";

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
  /** Where the controller may POST for an app (webhook-destinations.ts). */
  destinations: Pick<WebhookDestinations, "check">;
  /** The per-app rate limit of POSTs (webhooks/rate-limit.ts); absent: none. */
  limiter?: Pick<PostLimiter, "take">;
}

/**
 * Webhooks as the AnalysisProvider: each check is a POST of the payload to its URL, with its own timeout and
 * retries; the outcome is the status it answered with (scored as "webhook", 2xx passes), or an error when
 * no attempt got an answer, or nothing was sent: the URL is outside the controller's webhook policy, the
 * body over its bound, or the app over its rate limit.
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
  const key = objectKey(app) ?? "";
  try {
    const refused = await options.destinations.check(app, check.query, webhookSubject(check.name, check.query));
    if (refused !== undefined) return { kind: "error", message: shortText(refused, STATUS_MESSAGE_MAX) };
    const limiter = options.limiter;
    const answer = await postJson(check.query, webhookPayload(app, check), {
      timeoutSeconds: call.timeoutSeconds,
      retries: call.retries,
      ...(limiter !== undefined && { admit: () => limiter.take(key) }),
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

/** What the vet asks of the webhook policy (webhook-destinations.ts). */
export type WebhookVet = Pick<WebhookDestinations, "vet">;

/**
 * Why the app's webhooks may not be called, or undefined: one is outside the controller's webhook policy
 * (`WebhookURLNotAllowed`), or its request body would be over the bound (`WebhookBodyTooLarge`). Judged on
 * the URLs as they are called (rendered) and the payload as the status stands; throws `ServiceNotKnownYet`
 * while a Service a URL names was never looked up.
 */
export function webhookRefusal(
  app: CanaryApp,
  destinations: WebhookVet,
): { reason: string; message: string } | undefined {
  const webhooks = app.spec.analysis?.webhooks ?? [];
  const refused: string[] = [];
  for (const hook of webhooks) {
    const url = renderedWebhookUrl(app, hook.url);
    const why = destinations.vet(app, url, webhookSubject(hook.name, url));
    if (why !== undefined) refused.push(why);
  }
  if (refused.length > 0) {
    return { reason: "WebhookURLNotAllowed", message: shortText(refused.join("; "), REFUSAL_MESSAGE_MAX) };
  }
  for (const hook of webhooks) {
    const bytes = bodyBytes(
      webhookPayload(app, {
        name: hook.name,
        mode: "webhook",
        query: hook.url,
        webhook: { type: hook.type, timeoutSeconds: 0, retries: 0, metadata: hook.metadata ?? {} },
      }),
    );
    // The payload as it will be sent is this one with the test's fields filled in: a margin covers them.
    if (bytes + PAYLOAD_MARGIN_BYTES > MAX_REQUEST_BODY_BYTES) {
      return {
        reason: "WebhookBodyTooLarge",
        message:
          `webhook ${hook.name}: its request body would be ${bytes} bytes, over the ${MAX_REQUEST_BODY_BYTES}-byte ` +
          `limit (less ${PAYLOAD_MARGIN_BYTES} for the fields the test fills in); nothing was sent. Its ` +
          `metadata is sent as is: keep it short`,
      };
    }
  }
  return undefined;
}

/** Room left in the bound for what the payload gains during a test (stage, images, weights). */
const PAYLOAD_MARGIN_BYTES = 2048;

/** Longest refusal message: several webhooks' reasons together. */
const REFUSAL_MESSAGE_MAX = 1024;

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

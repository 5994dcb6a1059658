import type { Logger } from "pino";
import type { CanaryApp, Notice, NotificationType } from "../api/types.js";
import { objectKey } from "../object-keys.js";
import { ALLOWED_URLS_ANNOTATION, credentialRefusal, type SecretReader } from "../analysis/providers/credentials.js";
import {
  renderedWebhookUrl,
  webhookSubject,
  type WebhookDestinations,
} from "../analysis/providers/webhook-destinations.js";
import { BodyTooLargeError, postJson } from "../webhooks/post.js";
import type { PostLimiter } from "../webhooks/rate-limit.js";
import type { NoticeSender } from "./deliveries.js";
import { formatNotice, genericPayload } from "./format.js";

export interface SenderOptions {
  /**
   * Reads a Secret of the app's namespace through the app's own access path (the label-filtered cache),
   * with its `canaryapp.io/allowed-urls` annotation.
   */
  readSecret: SecretReader;
  /** Where the controller may POST for an app (analysis/providers/webhook-destinations.ts). */
  destinations: Pick<WebhookDestinations, "check">;
  /** Whether a URL read from a Secret may be plain http (--allow-plain-http-credentials). */
  allowPlainHttpCredentials: boolean;
  /** The controller-wide generic receiver, chosen by the operator (always allowed). */
  controllerURL: string | undefined;
  /** The per-app rate limit of POSTs (webhooks/rate-limit.ts); absent: none. */
  limiter?: Pick<PostLimiter, "take">;
  /** Told of a receiver skipped for good (a Warning Event on the app); absent: only logged. */
  skipped?: (app: CanaryApp, message: string) => void;
  /** Timeout of one POST. Default 10 s. */
  timeoutSeconds?: number;
  /** Retries of one POST, with backoff from 500 ms. Default 4. */
  retries?: number;
  log: Logger;
}

/** The reason of the Warning Event that says a receiver was skipped. */
export const NOTIFICATION_REFUSED = "NotificationRefused";

interface Target {
  type: NotificationType | "post-rollout";
  url: string;
  /** How the receiver is named in messages: never its URL when the URL came from a Secret. */
  label: string;
  metadata?: Record<string, string>;
}

/** Whether an app has anywhere to send notices (so that its status keeps an outbox). */
export function hasReceivers(app: CanaryApp, controllerURL: string | undefined): boolean {
  return (
    controllerURL !== undefined ||
    (app.spec.notifications?.length ?? 0) > 0 ||
    (app.spec.analysis?.webhooks ?? []).some((w) => w.type === "post-rollout")
  );
}

/**
 * Sends a notice to every receiver of the app: its `spec.notifications` (the URL read from the named
 * Secret), the controller-wide URL, and, for the end of a test, its post-rollout webhooks. Resolves once
 * each took it (2xx); rejects when one did not, or the app is over its rate limit, so that the whole notice
 * is sent again later (receivers that took it drop the repeat by its idempotency key). A receiver that
 * cannot be used is skipped with a warning and a Warning Event (retrying cannot make it usable): no such
 * labelled Secret or key; a URL that is not where its Secret may be sent (`canaryapp.io/allowed-urls`, https
 * unless plain http is allowed); a URL outside the webhook policy; a body over the bound.
 */
export function noticeSender(options: SenderOptions): NoticeSender {
  return async (app, notice) => {
    const targets = await targetsOf(app, notice, options);
    const ref = { name: app.metadata.name ?? "", namespace: app.metadata.namespace ?? "" };
    const payload = genericPayload(ref, notice);
    const key = objectKey(app) ?? "";
    const limiter = options.limiter;
    for (const target of targets) {
      const body =
        target.type === "post-rollout"
          ? {
              ...payload,
              type: "post-rollout",
              phase: app.status?.phase ?? "",
              images: { primary: app.status?.primaryImage, secondary: notice.image },
              metadata: target.metadata ?? {},
            }
          : formatNotice(target.type, payload);
      let answer;
      try {
        answer = await postJson(target.url, body, {
          timeoutSeconds: options.timeoutSeconds ?? 10,
          retries: options.retries ?? 4,
          minRetryDelayMs: 500,
          headers: { "idempotency-key": notice.idempotencyKey },
          ...(limiter !== undefined && { admit: () => limiter.take(key) }),
        });
      } catch (error) {
        if (!(error instanceof BodyTooLargeError)) throw error;
        skip(app, options, `${target.label}: ${error.message}`);
        continue;
      }
      if (answer.status < 200 || answer.status >= 300) {
        throw new Error(`${target.type} receiver answered ${answer.status} to notice ${notice.idempotencyKey}`);
      }
    }
  };
}

function skip(app: CanaryApp, options: SenderOptions, message: string): void {
  options.log.warn({ canaryapp: objectKey(app) }, `${message}; not sent there`);
  options.skipped?.(app, message);
}

async function targetsOf(app: CanaryApp, notice: Notice, options: SenderOptions): Promise<Target[]> {
  const namespace = app.metadata.namespace ?? "";
  const targets: Target[] = [];
  for (const spec of app.spec.notifications ?? []) {
    const key = spec.secretRef.key ?? "url";
    const label = `notification ${spec.type} (Secret ${spec.secretRef.name})`;
    const secret = await options.readSecret(namespace, spec.secretRef.name);
    const encoded = secret?.data?.[key];
    if (encoded === undefined) {
      skip(
        app,
        options,
        `${label}: no Secret of that name labelled as a canaryapp credential, or it has no key ${key}`,
      );
      continue;
    }
    const url = Buffer.from(encoded, "base64").toString("utf8").trim();
    if (!URL.canParse(url)) {
      skip(app, options, `${label}: its key ${key} holds no URL`);
      continue;
    }
    // The URL is the Secret's content: it goes only where the Secret says, like any credential, and
    // messages never repeat it.
    const refused =
      credentialRefusal(
        {
          secret: { name: spec.secretRef.name, namespace },
          allowedUrls: secret?.metadata?.annotations?.[ALLOWED_URLS_ANNOTATION],
          allowPlainHttp: options.allowPlainHttpCredentials,
        },
        url,
        "the URL it holds",
      ) ?? (await options.destinations.check(app, url, "the URL it holds"));
    if (refused !== undefined) {
      skip(app, options, `${label}: ${refused}`);
      continue;
    }
    targets.push({ type: spec.type, url, label });
  }
  if (options.controllerURL !== undefined) {
    targets.push({ type: "generic", url: options.controllerURL, label: "the controller's notification URL" });
  }
  if (notice.event === "Promoted" || notice.event === "RolledBack") {
    for (const hook of app.spec.analysis?.webhooks ?? []) {
      if (hook.type !== "post-rollout") continue;
      const url = renderedWebhookUrl(app, hook.url);
      const label = webhookSubject(hook.name, url);
      const refused = await options.destinations.check(app, url, label);
      if (refused !== undefined) {
        skip(app, options, refused);
        continue;
      }
      targets.push({ type: "post-rollout", url, label, ...(hook.metadata ? { metadata: hook.metadata } : {}) });
    }
  }
  return targets;
}

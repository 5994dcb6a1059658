import type { Logger } from "pino";
import type { CanaryApp, Notice, NotificationType } from "../api/types.js";
import type { SecretReader } from "../metrics/factory.js";
import { postJson } from "../webhooks/post.js";
import type { NoticeSender } from "./deliveries.js";
import { formatNotice, genericPayload } from "./format.js";

export interface SenderOptions {
  /** Reads a Secret of the app's namespace through the app's own access path (the label-filtered cache). */
  readSecret: SecretReader;
  /** Whether the controller may POST to a URL an app chose (its URL policy). */
  allowsUrl(url: string): boolean;
  /** The controller-wide generic receiver, chosen by the operator (always allowed). */
  controllerURL: string | undefined;
  /** Timeout of one POST. Default 10 s. */
  timeoutSeconds?: number;
  /** Retries of one POST, with backoff from 500 ms. Default 4. */
  retries?: number;
  log: Logger;
}

interface Target {
  type: NotificationType | "post-rollout";
  url: string;
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
 * each took it (2xx); rejects when one did not, so that the whole notice is sent again later (receivers
 * that took it drop the repeat by its idempotency key). A receiver that cannot be used (no such labelled
 * Secret or key, a URL outside the policy) is skipped with a warning: retrying cannot make it usable.
 */
export function noticeSender(options: SenderOptions): NoticeSender {
  return async (app, notice) => {
    const targets = await targetsOf(app, notice, options);
    const ref = { name: app.metadata.name ?? "", namespace: app.metadata.namespace ?? "" };
    const payload = genericPayload(ref, notice);
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
      const answer = await postJson(target.url, body, {
        timeoutSeconds: options.timeoutSeconds ?? 10,
        retries: options.retries ?? 4,
        minRetryDelayMs: 500,
        headers: { "idempotency-key": notice.idempotencyKey },
      });
      if (answer.status < 200 || answer.status >= 300) {
        throw new Error(`${target.type} receiver answered ${answer.status} to notice ${notice.idempotencyKey}`);
      }
    }
  };
}

async function targetsOf(app: CanaryApp, notice: Notice, options: SenderOptions): Promise<Target[]> {
  const namespace = app.metadata.namespace ?? "";
  const targets: Target[] = [];
  for (const spec of app.spec.notifications ?? []) {
    const key = spec.secretRef.key ?? "url";
    const secret = await options.readSecret(namespace, spec.secretRef.name);
    const encoded = secret?.data?.[key];
    if (encoded === undefined) {
      options.log.warn(
        { secret: spec.secretRef.name, key },
        "notification Secret (labelled as a canaryapp credential) or its key not found; not sent there",
      );
      continue;
    }
    const url = Buffer.from(encoded, "base64").toString("utf8").trim();
    if (!options.allowsUrl(url)) {
      options.log.warn({ secret: spec.secretRef.name }, "notification URL outside the URL policy; not sent there");
      continue;
    }
    targets.push({ type: spec.type, url });
  }
  if (options.controllerURL !== undefined) targets.push({ type: "generic", url: options.controllerURL });
  if (notice.event === "Promoted" || notice.event === "RolledBack") {
    for (const hook of app.spec.analysis?.webhooks ?? []) {
      if (hook.type !== "post-rollout") continue;
      if (!options.allowsUrl(hook.url)) continue;
      targets.push({ type: "post-rollout", url: hook.url, ...(hook.metadata ? { metadata: hook.metadata } : {}) });
    }
  }
  return targets;
}

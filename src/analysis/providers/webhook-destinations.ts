/**
 * Where an app's webhooks and notifications may be POSTed. They are not queries: the controller sends the
 * app author's JSON (a webhook's `metadata` as is) with a POST, so they get a policy of their own,
 * `--webhook-url-policy`, narrower by default than Prometheus': the Services of the app's own namespace
 * (`<name>.<namespace>.svc`, with or without `.cluster.local`), each checked as services.ts says. The
 * controller's own Prometheus is for queries only: no webhook or notification is ever sent there,
 * whatever the policy says (its admin API takes POSTs). The controller-wide `--notification-url` is the
 * operator's, and is not judged here.
 *
 * A short name, `<name>.<namespace>`, is not in the default: the controller's resolver tries it under its
 * own search path first (its own namespace's `svc` domain, where a headless Service named like the app's
 * namespace would answer), so the Service checked would not be the address reached.
 */
import type { CanaryApp } from "../../api/types.js";
import { withDefaults } from "../../api/defaults.js";
import { objectKey } from "../../object-keys.js";
import { destinationRefusal, serviceToCheck } from "./destination.js";
import { safeEndpoint } from "./message-text.js";
import type { ServiceVerdicts } from "./services.js";
import { judgeUrl, parseUrlPolicy, type UrlPolicy } from "./url-policy.js";
import { renderQuery, templateVars } from "../templates.js";

/** Stands for the app's namespace in an entry of the webhook policy. */
export const NAMESPACE_PLACEHOLDER = "{namespace}";

/** The webhook policy when the operator gives none: the Services of the app's own namespace. */
export const DEFAULT_WEBHOOK_URL_POLICY = [
  `*.${NAMESPACE_PLACEHOLDER}.svc`,
  `*.${NAMESPACE_PLACEHOLDER}.svc.cluster.local`,
] as const;

const WEBHOOK_POLICY = {
  policy: "webhook URL policy",
  flag: "--webhook-url-policy",
  remedy:
    "Use a Service of the app's own namespace (http://NAME.NAMESPACE.svc), or ask the controller's operator to " +
    "widen --webhook-url-policy",
};

export interface WebhookDestinations {
  /** The policy that applies to apps of `namespace`. */
  policyFor(namespace: string): UrlPolicy;
  /**
   * Why `url` may not be POSTed to for `app`, or undefined; from the last verdicts on Services (the
   * reconcile's check, synchronous). Throws `ServiceNotKnownYet` while a Service was never looked up.
   * `subject` begins the message ("webhook gate (http://…)").
   */
  vet(app: CanaryApp, url: string, subject: string): string | undefined;
  /** The same, with the Service's verdict at most a few seconds old: the check right before a POST. */
  check(app: CanaryApp, url: string, subject: string): Promise<string | undefined>;
}

export interface WebhookDestinationOptions {
  /** `--webhook-url-policy` (undefined: `DEFAULT_WEBHOOK_URL_POLICY`); `{namespace}` is the app's. */
  entries: readonly string[] | undefined;
  /** The controller's own Prometheus (`--prometheus-url`), never a destination of a POST. */
  ownPrometheusURL: string | undefined;
  /** The verdicts on Services; absent: a Service name is taken as the policy allows it. */
  services?: ServiceVerdicts | undefined;
}

/**
 * The webhook policy of a controller. Throws `UrlPolicyError` for entries that are not understood (checked
 * once here, for a sample namespace, so that a bad flag stops the controller at start).
 */
export function webhookDestinations(options: WebhookDestinationOptions): WebhookDestinations {
  const entries = options.entries ?? DEFAULT_WEBHOOK_URL_POLICY;
  const policies = new Map<string, UrlPolicy>();
  const policyFor = (namespace: string): UrlPolicy => {
    let policy = policies.get(namespace);
    if (policy === undefined) {
      policy = parseUrlPolicy(entries.map((e) => e.replaceAll(NAMESPACE_PLACEHOLDER, namespace)));
      // Namespaces are few; the map is bounded anyway, in case of churn.
      if (policies.size >= 1024) policies.clear();
      policies.set(namespace, policy);
    }
    return policy;
  };
  policyFor("default");
  const own =
    options.ownPrometheusURL !== undefined && URL.canParse(options.ownPrometheusURL)
      ? parseUrlPolicy([prefixOf(options.ownPrometheusURL)])
      : undefined;
  const services = options.services;
  const vet = (app: CanaryApp, url: string, subject: string): string | undefined => {
    if (own !== undefined && judgeUrl(own, url).kind === "allowed") {
      return (
        `${subject} is the controller's own Prometheus (--prometheus-url), which takes queries, never webhooks ` +
        `or notifications; nothing was sent to it`
      );
    }
    const key = objectKey(app);
    return destinationRefusal(subject, url, policyFor(app.metadata.namespace ?? "default"), WEBHOOK_POLICY, (s) =>
      services?.known(s, key),
    );
  };
  return {
    policyFor,
    vet,
    check: async (app, url, subject) => {
      const service = serviceToCheck(policyFor(app.metadata.namespace ?? "default"), url);
      // A fresh verdict first; the vet then reads it.
      if (service !== undefined) await services?.current(service, objectKey(app));
      return vet(app, url, subject);
    },
  };
}

/** A URL prefix entry for the origin and path of `url` (no query). */
function prefixOf(url: string): string {
  const parsed = new URL(url);
  return `${parsed.origin}${parsed.pathname}`;
}

/**
 * A webhook's URL as it is called for `app`: its `{{variables}}` rendered as the checks render them (a URL
 * with an unknown variable is left as written: the spec is reported invalid for it anyway).
 */
export function renderedWebhookUrl(app: CanaryApp, url: string): string {
  if (!url.includes("{{")) return url;
  try {
    return renderQuery(url, templateVars(app, withDefaults(app.spec)));
  } catch {
    return url;
  }
}

/** How a webhook is named in messages: its name and its URL as it may be shown. */
export function webhookSubject(name: string, url: string): string {
  return `webhook ${name} (${safeEndpoint(url)})`;
}

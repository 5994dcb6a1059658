/**
 * What a CanaryApp may make the controller do with Prometheus, decided before anything is read from a
 * Secret or sent anywhere. The controller acts with its own rights, so a tenant who may edit a CanaryApp
 * but not write Secrets must not be able to borrow them:
 * - a Secret is used only when it was made for that: it carries `canaryapp.io/credentials: "true"` (or the
 *   older `canaryapp.io/prometheus-credentials: "true"`), a label only someone allowed to write Secrets can
 *   set, and sits in the CanaryApp's own namespace;
 * - its contents go only where it says: its annotation `canaryapp.io/allowed-urls` lists the URL prefixes
 *   they may be sent to (set by whoever writes the Secret, so a tenant cannot point them at a server of
 *   its own), over https unless the operator allows plain http;
 * - the URL must be inside the controller's policy (url-policy.ts), and a URL allowed only as a Service's
 *   name must name a Service that selects pods (services.ts).
 */
import type { CanaryApp } from "../../api/types.js";
import { destinationRefusal, listed } from "./destination.js";
import { safeEndpoint } from "./message-text.js";
import { judgeUrl, parseUrlPolicy, UrlPolicyError, type ServiceName, type UrlPolicy } from "./url-policy.js";

/** The label that makes a Secret usable by the controller: Prometheus credentials, notification URLs. */
export const CREDENTIALS_LABEL = "canaryapp.io/credentials";
/** The label's older name, from when only Prometheus credentials were read; still accepted. */
export const LEGACY_CREDENTIALS_LABEL = "canaryapp.io/prometheus-credentials";
/**
 * The label selectors of the Secret informers, one a label (a selector cannot say "either"): the
 * controller never lists or caches any other Secret.
 */
export const CREDENTIALS_SELECTORS: readonly string[] = [
  `${CREDENTIALS_LABEL}=true`,
  `${LEGACY_CREDENTIALS_LABEL}=true`,
];

/**
 * The annotation of a credentials Secret that lists where its contents may be sent: comma-separated URL
 * prefixes (`https://prometheus.example.com/team-a`): same scheme, host and port, and a path at or below.
 */
export const ALLOWED_URLS_ANNOTATION = "canaryapp.io/allowed-urls";

/** The part of a Secret the check reads. */
export interface LabelledSecret {
  metadata?: {
    namespace?: string | undefined;
    name?: string | undefined;
    labels?: Record<string, string> | undefined;
    annotations?: Record<string, string> | undefined;
  };
}

/** The part of a core/v1 Secret that is read: `data` values are base64, as the API returns them. */
export interface SecretData {
  data?: Record<string, string> | undefined;
  metadata?: { annotations?: Record<string, string> | undefined } | undefined;
}

/** Looks a Secret up; resolves null/undefined when it does not exist. */
export type SecretReader = (namespace: string, name: string) => Promise<SecretData | null | undefined>;

/** Why the controller will not query an app's Prometheus; `reason` is the condition's and Event's reason. */
export interface AccessRefusal {
  reason: "CredentialsRefused" | "PrometheusURLNotAllowed";
  message: string;
}

export interface AccessRules {
  policy: UrlPolicy;
  /** The controller's default Prometheus, for apps that set no URL. */
  defaultPrometheusURL?: string | undefined;
  /** The Secret with this name in this namespace, from the label-filtered cache (undefined: none such). */
  secret: (namespace: string, name: string) => LabelledSecret | undefined;
  /**
   * Why a Service may not be used as a destination (services.ts), from the verdicts at hand; may throw while
   * it is not known yet. Absent: Service names are taken as the policy allows them.
   */
  service?: (service: ServiceName) => string | undefined;
  /** Whether credentials may be sent over plain http (--allow-plain-http-credentials). */
  allowPlainHttpCredentials?: boolean;
}

/** Whether a Secret is one the controller may use for an app in `namespace`. */
export function usableCredentials(secret: LabelledSecret | undefined, namespace: string): boolean {
  const labels = secret?.metadata?.labels;
  return (
    secret?.metadata?.namespace === namespace &&
    (labels?.[CREDENTIALS_LABEL] === "true" || labels?.[LEGACY_CREDENTIALS_LABEL] === "true")
  );
}

/** Where a credentials Secret may be sent: what its annotation names, and whether plain http is allowed. */
export interface CredentialDestination {
  /** The Secret, for messages. */
  secret: { name: string; namespace: string };
  /** The value of its `canaryapp.io/allowed-urls` annotation (undefined: it has none). */
  allowedUrls: string | undefined;
  allowPlainHttp: boolean;
}

/**
 * Why the contents of a credentials Secret may not be sent to `url`, or undefined when they may: the URL
 * must begin with one of the prefixes its annotation lists (the annotation must be there), and be https
 * unless plain http is allowed. `subject` names the URL in the message ("spec.prometheusURL http://…", or,
 * where the URL is itself the secret, "the URL it holds").
 */
export function credentialRefusal(
  destination: CredentialDestination,
  url: string,
  subject: string,
): string | undefined {
  const { secret, allowedUrls } = destination;
  const entries = (allowedUrls ?? "")
    .split(",")
    .map((e) => e.trim())
    .filter((e) => e !== "");
  if (entries.length === 0) {
    return (
      `the Secret has no annotation ${ALLOWED_URLS_ANNOTATION} naming where its contents may be sent, so it is ` +
      `not used and nothing was sent. Whoever may write the Secret lists the URL prefixes it is for: ` +
      `kubectl annotate secret ${secret.name} -n ${secret.namespace} ${ALLOWED_URLS_ANNOTATION}=https://HOST[:PORT][/PATH]`
    );
  }
  const notPrefix = entries.find((e) => !e.includes("://"));
  let prefixes: UrlPolicy;
  try {
    if (notPrefix !== undefined) throw new UrlPolicyError(`"${notPrefix}" is not a URL prefix`);
    prefixes = parseUrlPolicy(entries);
  } catch (error) {
    const why = error instanceof UrlPolicyError ? error.message : String(error);
    return (
      `its annotation ${ALLOWED_URLS_ANNOTATION} is not a list of URL prefixes (scheme://host[:port][/path]): ` +
      `${listed([why])}; nothing was sent`
    );
  }
  if (judgeUrl(prefixes, url).kind !== "allowed") {
    return `${subject} is not where the Secret may be sent (${ALLOWED_URLS_ANNOTATION}: ${listed(entries)}); nothing was sent`;
  }
  if (!destination.allowPlainHttp && new URL(url).protocol === "http:") {
    return (
      `credentials are not sent over plain http (${subject}); nothing was sent. Use https, or the ` +
      `controller's operator may allow it with --allow-plain-http-credentials`
    );
  }
  return undefined;
}

const PROMETHEUS_POLICY = {
  policy: "Prometheus URL policy",
  flag: "--prometheus-url-policy",
  remedy: "Use an allowed Prometheus, or ask the controller's operator to widen --prometheus-url-policy",
};

/** The Service an app's Prometheus URL must be checked as (see `judgeUrl`), if any. */
export function prometheusService(app: CanaryApp, rules: Pick<AccessRules, "policy" | "defaultPrometheusURL">) {
  const endpoint = app.spec.prometheusURL ?? rules.defaultPrometheusURL;
  if (endpoint === undefined || !URL.canParse(endpoint)) return undefined;
  const judgement = judgeUrl(rules.policy, endpoint);
  return judgement.kind === "service" ? judgement.service : undefined;
}

/**
 * Why `app` may not have its Prometheus queried, or undefined when it may. Names the setting at fault. A
 * URL that is missing or malformed is not judged here (the provider factory reports those).
 */
export function prometheusAccessRefusal(app: CanaryApp, rules: AccessRules): AccessRefusal | undefined {
  const endpoint = app.spec.prometheusURL ?? rules.defaultPrometheusURL;
  const usable = endpoint !== undefined && URL.canParse(endpoint);
  if (usable) {
    const refused = destinationRefusal(
      `spec.prometheusURL ${safeEndpoint(endpoint)}`,
      endpoint,
      rules.policy,
      PROMETHEUS_POLICY,
      (service) => rules.service?.(service),
    );
    if (refused !== undefined) return { reason: "PrometheusURLNotAllowed", message: refused };
  }
  const secretName = app.spec.prometheus?.secretRef?.name;
  if (secretName === undefined) return undefined;
  const namespace = app.metadata.namespace ?? "default";
  const secret = rules.secret(namespace, secretName);
  if (!usableCredentials(secret, namespace)) {
    return {
      reason: "CredentialsRefused",
      message:
        `spec.prometheus.secretRef ${secretName}: no Secret of that name in namespace ${namespace} carries the ` +
        `label ${CREDENTIALS_LABEL}=true (nor its older name ${LEGACY_CREDENTIALS_LABEL}=true), so it is not ` +
        `used and nothing was sent to Prometheus. Label a Secret ` +
        `made for Prometheus credentials: kubectl label secret ${secretName} -n ${namespace} ${CREDENTIALS_LABEL}=true`,
    };
  }
  if (!usable) return undefined;
  const refused = credentialRefusal(
    {
      secret: { name: secretName, namespace },
      allowedUrls: secret?.metadata?.annotations?.[ALLOWED_URLS_ANNOTATION],
      allowPlainHttp: rules.allowPlainHttpCredentials ?? false,
    },
    endpoint,
    `spec.prometheusURL ${safeEndpoint(endpoint)}`,
  );
  return refused === undefined
    ? undefined
    : { reason: "CredentialsRefused", message: `spec.prometheus.secretRef ${secretName}: ${refused}` };
}

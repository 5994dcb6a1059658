/**
 * What a CanaryApp may make the controller do with Prometheus, decided before anything is read from a
 * Secret or sent anywhere. The controller acts with its own rights, so a tenant who may edit a CanaryApp
 * but not read Secrets must not be able to borrow them: a Secret is used for Prometheus only when it was
 * made for that (it carries `canaryapp.io/credentials: "true"`, or the older
 * `canaryapp.io/prometheus-credentials: "true"`, a label only someone allowed to write Secrets can set) and sits in the CanaryApp's own namespace; and the URL must be inside the
 * controller's policy (url-policy.ts).
 */
import type { CanaryApp } from "../api/types.js";
import { safeEndpoint } from "./prometheus.js";
import { allowsUrl, type UrlPolicy } from "./url-policy.js";

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

/** The part of a Secret the check reads. */
export interface LabelledSecret {
  metadata?: { namespace?: string | undefined; name?: string | undefined; labels?: Record<string, string> | undefined };
}

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
}

/** Whether a Secret is one the controller may use for an app in `namespace`. */
export function usableCredentials(secret: LabelledSecret | undefined, namespace: string): boolean {
  const labels = secret?.metadata?.labels;
  return (
    secret?.metadata?.namespace === namespace &&
    (labels?.[CREDENTIALS_LABEL] === "true" || labels?.[LEGACY_CREDENTIALS_LABEL] === "true")
  );
}

/**
 * Why `app` may not have its Prometheus queried, or undefined when it may. Names the setting at fault. A
 * URL that is missing or malformed is not judged here (the provider factory reports those).
 */
export function prometheusAccessRefusal(app: CanaryApp, rules: AccessRules): AccessRefusal | undefined {
  const endpoint = app.spec.prometheusURL ?? rules.defaultPrometheusURL;
  if (endpoint !== undefined && URL.canParse(endpoint) && !allowsUrl(rules.policy, endpoint)) {
    return {
      reason: "PrometheusURLNotAllowed",
      message:
        `spec.prometheusURL ${safeEndpoint(endpoint)} is outside the controller's Prometheus URL policy ` +
        `(${rules.policy.entries.join(", ")}); nothing was sent to it. Use an allowed Prometheus, or ask the ` +
        `controller's operator to widen --prometheus-url-policy`,
    };
  }
  const secretName = app.spec.prometheus?.secretRef?.name;
  if (secretName === undefined) return undefined;
  const namespace = app.metadata.namespace ?? "default";
  if (!usableCredentials(rules.secret(namespace, secretName), namespace)) {
    return {
      reason: "CredentialsRefused",
      message:
        `spec.prometheus.secretRef ${secretName}: no Secret of that name in namespace ${namespace} carries the ` +
        `label ${CREDENTIALS_LABEL}=true (nor its older name ${LEGACY_CREDENTIALS_LABEL}=true), so it is not ` +
        `used and nothing was sent to Prometheus. Label a Secret ` +
        `made for Prometheus credentials: kubectl label secret ${secretName} -n ${namespace} ${CREDENTIALS_LABEL}=true`,
    };
  }
  return undefined;
}

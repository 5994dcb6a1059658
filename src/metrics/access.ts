import type { CanaryApp } from "../api/types.js";
import { prometheusAccessRefusal, usableCredentials, type AccessRefusal, type LabelledSecret } from "./credentials.js";
import type { SecretData, SecretReader } from "./factory.js";
import { allowsUrl, controllerUrlPolicy, type UrlPolicy } from "./url-policy.js";
import { objectKey } from "../controller/keys.js";

export interface PrometheusAccess {
  policy: UrlPolicy;
  /** Why an app's Prometheus may not be queried, or undefined. */
  vet: (app: CanaryApp) => AccessRefusal | undefined;
  /** Whether a redirect may be followed to `url`. */
  allowRedirect: (url: URL) => boolean;
  /** Reads a usable credentials Secret from the label-filtered cache; null for any other. */
  readSecret: SecretReader;
}

/**
 * The controller's rules for reaching Prometheus, over its label-filtered Secret cache: the URL policy (from
 * `--prometheus-url-policy`, with the controller's own default Prometheus always allowed) and the
 * credentials rule (credentials.ts).
 */
export function prometheusAccess(options: {
  policyEntries: readonly string[] | undefined;
  defaultPrometheusURL: string | undefined;
  secrets: { get(namespace: string, name: string): (LabelledSecret & SecretData) | undefined };
}): PrometheusAccess {
  const policy = controllerUrlPolicy(options.policyEntries, options.defaultPrometheusURL);
  const secret = (namespace: string, name: string) => options.secrets.get(namespace, name);
  return {
    policy,
    vet: (app) => prometheusAccessRefusal(app, { policy, defaultPrometheusURL: options.defaultPrometheusURL, secret }),
    allowRedirect: (url) => allowsUrl(policy, url),
    readSecret: (namespace, name) => {
      const found = secret(namespace, name);
      return Promise.resolve(usableCredentials(found, namespace) ? { data: found?.data } : null);
    },
  };
}

/** The keys (`namespace/name`) of the apps among `apps` whose `spec.prometheus.secretRef` names `secret`. */
export function appsUsingSecret(apps: readonly CanaryApp[], secret: LabelledSecret): string[] {
  const { namespace, name } = secret.metadata ?? {};
  return apps
    .filter((app) => app.metadata.namespace === namespace && app.spec.prometheus?.secretRef?.name === name)
    .map((app) => objectKey(app) ?? "");
}

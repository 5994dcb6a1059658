import type { CanaryApp } from "../../../api/types.js";
import {
  ALLOWED_URLS_ANNOTATION,
  credentialRefusal,
  prometheusAccessRefusal,
  prometheusService,
  usableCredentials,
  type AccessRefusal,
  type AccessRules,
  type LabelledSecret,
  type SecretData,
  type SecretReader,
} from "../credentials.js";
import { safeEndpoint } from "../message-text.js";
import type { ServiceVerdicts } from "../services.js";
import { controllerUrlPolicy, judgeUrl, type UrlPolicy } from "../url-policy.js";
import { objectKey } from "../../../object-keys.js";

export interface PrometheusAccess {
  policy: UrlPolicy;
  /**
   * Why an app's Prometheus may not be queried, or undefined; from the caches and the last verdicts on
   * Services (the reconcile's check, synchronous). Throws `ServiceNotKnownYet` while a Service the URL names
   * was never looked up (the lookup is under way: the reconcile is simply tried again).
   */
  vet: (app: CanaryApp) => AccessRefusal | undefined;
  /** The same, with the Service's verdict at most a few seconds old: the check right before a query. */
  check: (app: CanaryApp) => Promise<AccessRefusal | undefined>;
  /** Whether a redirect may be followed to `url` (a Service name only once known to be usable). */
  allowRedirect: (url: URL) => boolean;
  /** Why a credentials Secret (with its `canaryapp.io/allowed-urls`) may not be sent to `url`, or undefined. */
  credentialsMayGo: (
    secret: { name: string; namespace: string; allowedUrls: string | undefined },
    url: string,
  ) => string | undefined;
  /** Reads a usable credentials Secret (data and annotations) from the label-filtered cache; null for any other. */
  readSecret: SecretReader;
}

/**
 * The controller's rules for reaching Prometheus, over its label-filtered Secret cache: the URL policy (from
 * `--prometheus-url-policy`, with the controller's own default Prometheus always allowed), the Service check
 * for URLs allowed only as a Service's name, and the credentials rules (../credentials.ts).
 */
export function prometheusAccess(options: {
  policyEntries: readonly string[] | undefined;
  defaultPrometheusURL: string | undefined;
  secrets: { get(namespace: string, name: string): (LabelledSecret & SecretData) | undefined };
  /** The verdicts on Services; absent: a Service name is taken as the policy allows it. */
  services?: ServiceVerdicts;
  allowPlainHttpCredentials?: boolean;
}): PrometheusAccess {
  const policy = controllerUrlPolicy(options.policyEntries, options.defaultPrometheusURL);
  const secret = (namespace: string, name: string) => options.secrets.get(namespace, name);
  const services = options.services;
  const allowPlainHttp = options.allowPlainHttpCredentials ?? false;
  const rules = (app: CanaryApp): AccessRules => ({
    policy,
    defaultPrometheusURL: options.defaultPrometheusURL,
    secret,
    allowPlainHttpCredentials: allowPlainHttp,
    ...(services !== undefined && { service: (s) => services.known(s, objectKey(app)) }),
  });
  const vet = (app: CanaryApp) => prometheusAccessRefusal(app, rules(app));
  return {
    policy,
    vet,
    check: async (app) => {
      const service = prometheusService(app, { policy, defaultPrometheusURL: options.defaultPrometheusURL });
      // A fresh verdict first; the vet then reads it.
      if (service !== undefined) await services?.current(service, objectKey(app));
      return vet(app);
    },
    allowRedirect: (url) => {
      const judgement = judgeUrl(policy, url);
      if (judgement.kind === "allowed") return true;
      if (judgement.kind !== "service") return false;
      if (services === undefined) return true;
      // A redirect cannot wait for a lookup: only a Service already known to be usable is followed to.
      try {
        return services.known(judgement.service) === undefined;
      } catch {
        return false;
      }
    },
    credentialsMayGo: ({ name, namespace, allowedUrls }, url) =>
      credentialRefusal({ secret: { name, namespace }, allowedUrls, allowPlainHttp }, url, `URL ${safeEndpoint(url)}`),
    readSecret: (namespace, name) => {
      const found = secret(namespace, name);
      if (!usableCredentials(found, namespace)) return Promise.resolve(null);
      const allowedUrls = found?.metadata?.annotations?.[ALLOWED_URLS_ANNOTATION];
      return Promise.resolve({
        data: found?.data,
        ...(allowedUrls !== undefined && { metadata: { annotations: { [ALLOWED_URLS_ANNOTATION]: allowedUrls } } }),
      });
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

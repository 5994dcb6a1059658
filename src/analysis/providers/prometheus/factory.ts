/**
 * One provider per distinct connection. An app's connection is its `spec.prometheusURL` (or the
 * controller's default), the timeout from `spec.prometheus.timeoutSeconds`, and credentials and CA from the
 * Secret named by `spec.prometheus.secretRef`. The Secret is read through a function the caller passes, so
 * this module needs no Kubernetes client (the reconciler hands in an informer-cache lookup).
 */
import { createHash } from "node:crypto";
import type { Logger } from "pino";
import { DEFAULTS } from "../../../api/defaults.js";
import type { CanaryApp } from "../../../api/types.js";
import { ALLOWED_URLS_ANNOTATION, type AccessRefusal, type SecretData, type SecretReader } from "../credentials.js";
import { PrometheusConfigError } from "./errors.js";
import type { MetricsProvider } from "./provider.js";
import { PrometheusProvider, type PrometheusAuth } from "./client.js";
import { safeEndpoint } from "../message-text.js";
import type { RetryPolicy } from "./retry.js";
import { objectKey } from "../../../object-keys.js";

/** What the controller's configuration supplies for every app. */
export interface ProviderDefaults {
  /** Used when an app sets no `spec.prometheusURL`. */
  prometheusURL?: string | undefined;
  retry?: Partial<RetryPolicy>;
  log?: Logger;
  /** Refuses an app's Prometheus settings before any Secret is read or request sent (../credentials.ts). */
  vet?: (app: CanaryApp) => AccessRefusal | undefined | Promise<AccessRefusal | undefined>;
  /** Whether a redirect may be followed to this URL (../url-policy.ts); absent: any. */
  allowRedirect?: (url: URL) => boolean;
  /**
   * Why credentials from a Secret with this `canaryapp.io/allowed-urls` annotation may not be sent to `url`
   * (../credentials.ts), or undefined: checked against the Secret as read, for the URL and every redirect.
   * Absent: credentials go wherever the URL policy allows.
   */
  credentialsMayGo?: (
    secret: { name: string; namespace: string; allowedUrls: string | undefined },
    url: string,
  ) => string | undefined;
}

/** Keys read from the Secret named by `spec.prometheus.secretRef`. */
export const SECRET_KEYS = { token: "token", username: "username", password: "password", ca: "ca.crt" } as const;

/** Everything that makes two providers different. */
export interface ConnectionSettings {
  endpoint: string;
  timeoutMs: number;
  auth?: PrometheusAuth;
  caPem?: string;
  /** With `auth`: the Secret and its `canaryapp.io/allowed-urls`, which every redirect must stay within too. */
  credentials?: { name: string; namespace: string; allowedUrls: string | undefined };
}

/** Providers are few (usually one) but a rotated Secret leaves its old entry behind: keep the newest. */
const MAX_CACHED = 64;

/**
 * The providers (one connection pool each) of a controller, by connection settings: every app with the same
 * URL, timeout, credentials and CA shares one. The controller makes one and hands it to whatever queries.
 */
export class ProviderPool {
  private readonly providers = new Map<string, MetricsProvider>();

  /** The provider for these settings, made on first use; the least recently used go beyond the limit. */
  get(settings: ConnectionSettings, defaults: ProviderDefaults): MetricsProvider {
    const key = cacheKey(settings, defaults.retry);
    const cached = this.providers.get(key);
    if (cached) {
      // Re-inserted so the map's order is least recently used first.
      this.providers.delete(key);
      this.providers.set(key, cached);
      return cached;
    }
    const { credentials, ...connection } = settings;
    const mayGo = defaults.credentialsMayGo;
    const withCredentials =
      credentials !== undefined && mayGo !== undefined
        ? (url: URL) => mayGo(credentials, url.href) === undefined
        : undefined;
    const policy = defaults.allowRedirect;
    const allowRedirect =
      withCredentials === undefined
        ? policy
        : (url: URL) => withCredentials(url) && (policy === undefined || policy(url));
    const provider = new PrometheusProvider({
      ...connection,
      ...(defaults.retry ? { retry: defaults.retry } : {}),
      ...(defaults.log ? { log: defaults.log } : {}),
      ...(allowRedirect ? { allowRedirect } : {}),
    });
    this.providers.set(key, provider);
    for (const oldest of this.providers.keys()) {
      if (this.providers.size <= MAX_CACHED) break;
      this.providers.delete(oldest);
    }
    return provider;
  }

  /** Forgets every provider. */
  clear(): void {
    this.providers.clear();
  }
}

/** The pool of callers that bring none (`providerFor` and `runAppQueries` without one). */
const sharedPool = new ProviderPool();

/** Forgets every provider of the shared pool. */
export function clearProviderCache(): void {
  sharedPool.clear();
}

function appKey(app: CanaryApp): string {
  return objectKey(app) ?? "";
}

/** Reads the app's connection settings; throws `PrometheusConfigError` naming the app when they cannot work. */
export async function connectionFor(
  app: CanaryApp,
  defaults: ProviderDefaults,
  readSecret: SecretReader,
): Promise<ConnectionSettings> {
  const key = appKey(app);
  const refused = await defaults.vet?.(app);
  if (refused) throw new PrometheusConfigError(`CanaryApp ${key}: ${refused.message}`);
  const endpoint = app.spec.prometheusURL ?? defaults.prometheusURL;
  if (!endpoint) {
    throw new PrometheusConfigError(
      `CanaryApp ${key}: no Prometheus URL: set spec.prometheusURL or the controller's default`,
    );
  }
  let url: URL;
  try {
    url = new URL(endpoint);
  } catch (err) {
    throw new PrometheusConfigError(`CanaryApp ${key}: spec.prometheusURL is not a valid URL`, { cause: err });
  }
  if (url.protocol !== "http:" && url.protocol !== "https:") {
    throw new PrometheusConfigError(`CanaryApp ${key}: Prometheus URL ${safeEndpoint(endpoint)} must be http or https`);
  }
  const timeoutMs = (app.spec.prometheus?.timeoutSeconds ?? DEFAULTS.prometheusTimeoutSeconds) * 1000;
  const settings: ConnectionSettings = { endpoint, timeoutMs };

  const secretName = app.spec.prometheus?.secretRef?.name;
  if (!secretName) return settings;
  const namespace = app.metadata.namespace ?? "default";
  let secret: SecretData | null | undefined;
  try {
    secret = await readSecret(namespace, secretName);
  } catch (err) {
    throw new Error(`CanaryApp ${key}: reading Secret ${namespace}/${secretName} failed`, { cause: err });
  }
  if (!secret) {
    throw new PrometheusConfigError(
      `CanaryApp ${key}: Secret ${namespace}/${secretName} (spec.prometheus.secretRef) not found`,
    );
  }
  const value = (name: string): string | undefined => {
    const encoded = secret.data?.[name];
    return encoded === undefined ? undefined : Buffer.from(encoded, "base64").toString("utf8");
  };
  const token = value(SECRET_KEYS.token)?.trim();
  const username = value(SECRET_KEYS.username);
  const password = value(SECRET_KEYS.password);
  // A token wins over basic auth when both are present, as a bearer token is the more specific setting.
  if (token) settings.auth = { bearerToken: token };
  else if (username !== undefined) {
    if (password === undefined) {
      throw new PrometheusConfigError(
        `CanaryApp ${key}: Secret ${namespace}/${secretName} has "${SECRET_KEYS.username}" but no "${SECRET_KEYS.password}"`,
      );
    }
    settings.auth = { username, password };
  }
  const caPem = value(SECRET_KEYS.ca);
  if (caPem) settings.caPem = caPem;
  if (settings.auth !== undefined && defaults.credentialsMayGo !== undefined) {
    // Judged on the Secret as read, whatever the vet saw in the cache a moment ago.
    const credentials = {
      name: secretName,
      namespace,
      allowedUrls: secret.metadata?.annotations?.[ALLOWED_URLS_ANNOTATION],
    };
    const refused = defaults.credentialsMayGo(credentials, endpoint);
    if (refused !== undefined) {
      throw new PrometheusConfigError(`CanaryApp ${key}: spec.prometheus.secretRef ${secretName}: ${refused}`);
    }
    settings.credentials = credentials;
  }
  return settings;
}

/** A digest of the settings, so the cache's keys hold no credentials in clear. */
function cacheKey(settings: ConnectionSettings, retry: Partial<RetryPolicy> | undefined): string {
  return createHash("sha256")
    .update(
      JSON.stringify([
        settings.endpoint,
        settings.timeoutMs,
        settings.auth ?? null,
        settings.caPem ?? null,
        settings.credentials ?? null,
        retry ?? null,
      ]),
    )
    .digest("hex");
}

/**
 * The provider for `app`'s Prometheus from `pool`, shared by every app with the same URL, timeout, credentials and CA.
 * Throws `PrometheusConfigError` when the URL is missing or malformed, or the Secret is missing or incomplete;
 * a plain `Error` (with the reader's rejection as cause) when the Secret could not be read.
 */
export async function providerFor(
  app: CanaryApp,
  defaults: ProviderDefaults,
  readSecret: SecretReader,
  pool: ProviderPool = sharedPool,
): Promise<MetricsProvider> {
  return pool.get(await connectionFor(app, defaults, readSecret), defaults);
}

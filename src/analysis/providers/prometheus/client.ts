import { Agent as HttpsAgent } from "node:https";
import type { Logger } from "pino";
import type { PrometheusDriver, PrometheusConnectionOptions } from "prometheus-query";
import { PrometheusConfigError, toPrometheusError, type PrometheusError } from "./errors.js";
import type { DataOutcome, MetricsProvider } from "./provider.js";
import { respellInfinities, toOutcome, toSamples } from "./result.js";
import type { SampleRange } from "../../checks.js";
import { DEFAULT_RETRY_POLICY, retryTransient, type RetryPolicy } from "./retry.js";
import { safeEndpoint, shortText } from "../message-text.js";

/** How to authenticate to Prometheus: a bearer token, or HTTP basic auth. */
export type PrometheusAuth = { bearerToken: string } | { username: string; password: string };

export interface PrometheusProviderOptions {
  /** Base URL of Prometheus, e.g. `http://prometheus.istio-system:9090`; a path prefix is kept. */
  endpoint: string;
  /** Limit for one attempt (client side, and passed to Prometheus as the evaluation timeout). */
  timeoutMs?: number;
  auth?: PrometheusAuth;
  /** PEM bundle that verifies Prometheus' certificate, in place of the system's roots. */
  caPem?: string;
  retry?: Partial<RetryPolicy>;
  /** The evaluation time of instant queries. */
  now?: () => Date;
  log?: Logger;
  /** Whether a redirect may be followed to this URL; a refused one fails the query, unfollowed. */
  allowRedirect?: (url: URL) => boolean;
}

export const DEFAULT_TIMEOUT_MS = 5_000;

/**
 * A short, printable excerpt of a non-Prometheus error body (a proxy's plain-text message): its first line,
 * at most 80 characters. Whatever answered may not be a Prometheus, so its body is not echoed beyond that.
 */
function describeBody(data: unknown, statusText: unknown): string {
  if (typeof data === "string" && data.trim() !== "" && !data.trimStart().startsWith("<")) {
    return shortText(data.trim().split("\n")[0] ?? "");
  }
  return typeof statusText === "string" && statusText !== "" ? statusText : "no detail";
}

/**
 * A `MetricsProvider` over Prometheus' HTTP API (prometheus-query's `PrometheusDriver`): instant queries,
 * transient failures retried per `RetryPolicy`, every failure a typed `PrometheusError`.
 */
export class PrometheusProvider implements MetricsProvider {
  /** The endpoint without credentials, as it appears in error messages. */
  readonly endpoint: string;
  private readonly driverOptions: PrometheusConnectionOptions;
  /** Made at the first query: prometheus-query (and axios) are loaded only by a controller that queries. */
  private driver: Promise<PrometheusDriver> | undefined;
  private readonly policy: RetryPolicy;
  private readonly evaluationTimeout: string;
  private readonly now: () => Date;
  private readonly log: Logger | undefined;

  constructor(options: PrometheusProviderOptions) {
    this.endpoint = safeEndpoint(options.endpoint);
    let url: URL;
    try {
      url = new URL(options.endpoint);
    } catch (err) {
      throw new PrometheusConfigError(`Prometheus URL is not a valid URL`, { cause: err });
    }
    if (url.protocol !== "http:" && url.protocol !== "https:") {
      throw new PrometheusConfigError(`Prometheus ${this.endpoint}: the URL must be http or https`);
    }
    const timeoutMs = options.timeoutMs ?? DEFAULT_TIMEOUT_MS;
    this.policy = { ...DEFAULT_RETRY_POLICY, ...options.retry };
    this.evaluationTimeout = `${Math.max(1, Math.round(timeoutMs))}ms`;
    this.now = options.now ?? (() => new Date());
    this.log = options.log;

    const headers: Record<string, string> = {};
    // Basic auth is set as a header rather than the driver's `auth`, which drops an empty password.
    if (options.auth && "bearerToken" in options.auth) headers.Authorization = `Bearer ${options.auth.bearerToken}`;
    if (options.auth && "username" in options.auth) {
      const pair = `${options.auth.username}:${options.auth.password}`;
      headers.Authorization = `Basic ${Buffer.from(pair, "utf8").toString("base64")}`;
    }
    const httpsAgent = options.caPem ? new HttpsAgent({ ca: options.caPem }) : undefined;
    const allowRedirect = options.allowRedirect;
    // Called by axios' redirect follower before it connects to the next location; throwing stops it there.
    const beforeRedirect = allowRedirect
      ? (next: { href?: string }) => {
          if (next.href === undefined || !allowRedirect(new URL(next.href))) {
            throw new PrometheusConfigError(
              `Prometheus ${this.endpoint}: redirected to ${safeEndpoint(next.href ?? "")}, outside the controller's Prometheus URL policy (or where the credentials sent may go); not followed`,
            );
          }
        }
      : undefined;

    this.driverOptions = {
      endpoint: options.endpoint,
      headers,
      timeout: timeoutMs,
      // The driver exposes no TLS settings; its axios instance takes an agent per request.
      requestInterceptor: {
        onFulfilled: (config) => {
          if (httpsAgent) config.httpsAgent = httpsAgent;
          if (beforeRedirect) config.beforeRedirect = beforeRedirect;
          return config;
        },
      },
      responseInterceptor: {
        onFulfilled: (response) => {
          respellInfinities(response.data);
          return response;
        },
        onRejected: (error: unknown) => {
          // The driver drops the HTTP status of an error whose body is not Prometheus JSON (a proxy's
          // 502 page, a plain "Too Many Requests"), leaving 500 and 400 indistinguishable. Give such
          // bodies Prometheus' error shape so the status survives to the classification.
          const response = (error as { response?: { data?: unknown; status?: unknown; statusText?: unknown } })
            .response;
          if (
            response &&
            (typeof response.data !== "object" || response.data === null || !("status" in response.data))
          ) {
            response.data = { status: "error", errorType: "", error: describeBody(response.data, response.statusText) };
          }
          throw error;
        },
      },
    };
  }

  query(promql: string): Promise<DataOutcome> {
    return retryTransient(() => this.queryOnce(promql), this.policy, this.log, {
      prometheus: this.endpoint,
      query: promql,
    });
  }

  queryRange(promql: string, range: SampleRange): Promise<DataOutcome> {
    return retryTransient(() => this.queryRangeOnce(promql, range), this.policy, this.log, {
      prometheus: this.endpoint,
      query: promql,
      range,
    });
  }

  private loadDriver(): Promise<PrometheusDriver> {
    return (this.driver ??= import("prometheus-query").then(
      ({ PrometheusDriver }) => new PrometheusDriver(this.driverOptions),
    ));
  }

  private async queryOnce(promql: string): Promise<DataOutcome> {
    const driver = await this.loadDriver();
    let result;
    try {
      result = await driver.instantQuery(promql, this.now(), this.evaluationTimeout);
    } catch (rejection) {
      throw this.typed(rejection);
    }
    return toOutcome(result, this.endpoint);
  }

  private async queryRangeOnce(promql: string, range: SampleRange): Promise<DataOutcome> {
    const driver = await this.loadDriver();
    let result;
    try {
      const [start, end] = [new Date(range.start), new Date(range.end)];
      result = await driver.rangeQuery(promql, start, end, range.stepSeconds, this.evaluationTimeout);
    } catch (rejection) {
      throw this.typed(rejection);
    }
    return toSamples(result, this.endpoint);
  }

  private typed(rejection: unknown): PrometheusError {
    return refusedRedirect(rejection) ?? toPrometheusError(rejection, this.endpoint);
  }
}

/** The refusal thrown by `beforeRedirect`, wherever the HTTP client and the driver wrapped it. */
function refusedRedirect(rejection: unknown, depth = 0): PrometheusConfigError | undefined {
  if (rejection instanceof PrometheusConfigError) return rejection;
  if (typeof rejection !== "object" || rejection === null || depth > 5) return undefined;
  const { cause, original } = rejection as { cause?: unknown; original?: unknown };
  return refusedRedirect(cause, depth + 1) ?? refusedRedirect(original, depth + 1);
}

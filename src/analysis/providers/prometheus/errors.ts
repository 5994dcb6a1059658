/**
 * Typed errors of the metrics provider, and the one place where whatever prometheus-query (or axios below
 * it) rejects with is turned into one of them. p-retry only retries `Error`s (a plain object becomes a
 * TypeError it never retries), and the retry decision needs the kind, so every rejection passes through
 * `toPrometheusError` before the retry logic sees it.
 */

/** Why a query produced no number, as a stable word for status, events and decisions. */
export type PrometheusErrorReason =
  "PrometheusUnavailable" | "QueryRejected" | "UnexpectedResult" | "PrometheusConfigInvalid";

/** Base of every metrics-provider error. `retryable` says whether asking again may give another answer. */
export abstract class PrometheusError extends Error {
  abstract readonly reason: PrometheusErrorReason;
  abstract readonly retryable: boolean;
  /** The HTTP status Prometheus (or a proxy in front of it) answered with, when there was an answer. */
  readonly status: number | undefined;
  /** Prometheus' `errorType` (bad_data, execution, timeout, ...) or the transport's error code. */
  readonly errorType: string | undefined;

  constructor(message: string, details: { status?: number; errorType?: string; cause?: unknown } = {}) {
    super(message, details.cause === undefined ? undefined : { cause: details.cause });
    this.status = details.status;
    this.errorType = details.errorType;
  }
}

/**
 * Prometheus could not be asked: connection refused or reset, timeout, 5xx, 429. Transient, hence retried —
 * except a failed TLS verification, which is a setting to fix and is reported at once.
 */
export class PrometheusUnavailableError extends PrometheusError {
  override readonly name = "PrometheusUnavailableError";
  readonly reason = "PrometheusUnavailable";
  readonly retryable: boolean;

  constructor(message: string, details: { status?: number; errorType?: string; cause?: unknown; retryable?: boolean }) {
    super(message, details);
    this.retryable = details.retryable ?? true;
  }
}

/**
 * Prometheus refused the request itself: bad PromQL (400 bad_data), an execution error (422), or any other
 * 4xx such as 401/403/404. Asking again would get the same answer, so it is never retried.
 */
export class PrometheusQueryError extends PrometheusError {
  override readonly name = "PrometheusQueryError";
  readonly reason = "QueryRejected";
  readonly retryable = false;
}

/** Prometheus answered, but not with something that is one number or a list of them (a matrix, a string...). */
export class UnexpectedResultError extends PrometheusError {
  override readonly name = "UnexpectedResultError";
  readonly reason = "UnexpectedResult";
  readonly retryable = false;
}

/**
 * The connection settings cannot work: no or a malformed URL, a Secret that is missing or lacks a key.
 * Raised before any request is made; not retried by the provider (the Secret may be fixed later, which
 * the next reconcile picks up).
 */
export class PrometheusConfigError extends PrometheusError {
  override readonly name = "PrometheusConfigError";
  readonly reason = "PrometheusConfigInvalid";
  readonly retryable = false;
}

/** Transport error codes that mean "the configuration is wrong", not "try again later". */
const PERMANENT_TRANSPORT_CODES = new Set([
  "ERR_INVALID_URL",
  "ERR_TLS_CERT_ALTNAME_INVALID",
  "DEPTH_ZERO_SELF_SIGNED_CERT",
  "SELF_SIGNED_CERT_IN_CHAIN",
  "UNABLE_TO_VERIFY_LEAF_SIGNATURE",
  "UNABLE_TO_GET_ISSUER_CERT_LOCALLY",
  "CERT_HAS_EXPIRED",
  "CERT_NOT_YET_VALID",
]);

/** The fields prometheus-query puts on the plain objects it rejects with (and that axios errors carry). */
interface RejectionShape {
  errorType?: unknown;
  error?: unknown;
  httpStatus?: unknown;
  code?: unknown;
  message?: unknown;
  isAxiosError?: unknown;
  response?: { status?: unknown; statusText?: unknown; data?: unknown };
}

function text(value: unknown): string | undefined {
  return typeof value === "string" && value !== "" ? value : undefined;
}

/** Classifies an HTTP error status: 5xx and 429 are transient, every other status is a refusal. */
function fromHttpStatus(prefix: string, status: number, errorType: string | undefined, detail: string, cause: unknown) {
  const message = `${prefix}: HTTP ${status}${errorType ? ` ${errorType}` : ""}: ${detail}`;
  if (status >= 500 || status === 429) return new PrometheusUnavailableError(message, { status, errorType, cause });
  return new PrometheusQueryError(message, { status, errorType, cause });
}

/**
 * Turns any rejection of a query into a `PrometheusError`. `endpoint` names the Prometheus in the message
 * (it must already be free of credentials). Already-typed errors pass through unchanged.
 */
export function toPrometheusError(rejection: unknown, endpoint: string): PrometheusError {
  if (rejection instanceof PrometheusError) return rejection;
  const prefix = `Prometheus ${endpoint}`;
  if (typeof rejection === "string") return new UnexpectedResultError(`${prefix}: ${rejection}`);
  if (typeof rejection !== "object" || rejection === null) {
    return new UnexpectedResultError(`${prefix}: query failed without a reason`, { cause: rejection });
  }
  const r = rejection as RejectionShape;
  // The driver's catch-all runs its normaliser a second time over its own rejection from the success path
  // (a 2xx body that is not Prometheus JSON), wrapping it as a "network_error": classify the inner one.
  const original = (rejection as { original?: unknown }).original;
  if (typeof original === "object" && original !== null && (original as RejectionShape).isAxiosError !== true) {
    if (typeof (original as RejectionShape).errorType === "string") return toPrometheusError(original, endpoint);
  }
  const errorType = text(r.errorType);
  const code = text(r.code);
  const detail = text(r.error) ?? text(r.message) ?? "no detail";

  // prometheus-query's shape for an answer with an HTTP error status.
  if (errorType === "http_error" && typeof r.httpStatus === "number") {
    const apiErrorType = apiErrorTypeOf(rejection);
    return fromHttpStatus(prefix, r.httpStatus, apiErrorType, detail, rejection);
  }
  // An axios error that did not go through the driver's normaliser.
  if (r.isAxiosError === true && typeof r.response?.status === "number") {
    return fromHttpStatus(prefix, r.response.status, undefined, text(r.response.statusText) ?? detail, rejection);
  }
  if (errorType === "timeout_error" || code === "ECONNABORTED" || code === "ETIMEDOUT") {
    return new PrometheusUnavailableError(`${prefix}: timed out: ${detail}`, {
      errorType: "timeout",
      cause: rejection,
    });
  }
  if (errorType === "network_error" || errorType === "ssl_error" || r.isAxiosError === true) {
    const retryable = !(code !== undefined && PERMANENT_TRANSPORT_CODES.has(code));
    return new PrometheusUnavailableError(`${prefix}: ${code ? `${code}: ` : ""}${detail}`, {
      errorType: code ?? errorType,
      cause: rejection,
      retryable,
    });
  }
  // "client_error": a 2xx answer whose body is not a Prometheus API response (a wrong URL, a login page...).
  if (errorType === "client_error") {
    return new UnexpectedResultError(`${prefix}: the answer is not a Prometheus API response`, {
      errorType,
      cause: rejection,
    });
  }
  return new UnexpectedResultError(`${prefix}: ${detail}`, { errorType, cause: rejection });
}

/** Prometheus' own errorType (bad_data, execution, timeout, unavailable) from the error payload, if any. */
function apiErrorTypeOf(rejection: object): string | undefined {
  const payload = (rejection as { prometheus?: unknown }).prometheus;
  if (typeof payload !== "object" || payload === null) return undefined;
  return text((payload as { errorType?: unknown }).errorType);
}

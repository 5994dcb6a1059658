/**
 * Typed errors of the metrics provider, and the one place where an HTTP answer or a transport failure is
 * turned into one of them. The retry decision needs the kind, so every rejection passes through
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
 * The error for an answer with an HTTP error status. `body` is the answer's parsed JSON when it was JSON
 * (Prometheus' `{status: "error", errorType, error}`), else its text; `detail` is what to show when the
 * body is not Prometheus' (the status text or a short excerpt of a proxy's page).
 */
export function fromHttpAnswer(endpoint: string, status: number, body: unknown, detail: string): PrometheusError {
  const prefix = `Prometheus ${endpoint}`;
  if (typeof body === "object" && body !== null && "status" in body) {
    const b = body as { errorType?: unknown; error?: unknown };
    return fromHttpStatus(prefix, status, text(b.errorType), text(b.error) ?? detail, body);
  }
  return fromHttpStatus(prefix, status, undefined, detail, body);
}

/**
 * Turns any rejection of a query into a `PrometheusError`. `endpoint` names the Prometheus in the message
 * (it must already be free of credentials). Already-typed errors pass through unchanged; the transport's
 * errors (Node's, with a `code`) are "unavailable", retried unless the code says the settings are wrong.
 */
export function toPrometheusError(rejection: unknown, endpoint: string): PrometheusError {
  if (rejection instanceof PrometheusError) return rejection;
  const prefix = `Prometheus ${endpoint}`;
  if (typeof rejection === "string") return new UnexpectedResultError(`${prefix}: ${rejection}`);
  if (typeof rejection !== "object" || rejection === null) {
    return new UnexpectedResultError(`${prefix}: query failed without a reason`, { cause: rejection });
  }
  const { code: rawCode, message } = rejection as { code?: unknown; message?: unknown };
  const code = text(rawCode);
  const detail = text(message) ?? "no detail";
  if (code === undefined) return new UnexpectedResultError(`${prefix}: ${detail}`, { cause: rejection });
  if (code === "ETIMEDOUT" || code === "ECONNABORTED") {
    return new PrometheusUnavailableError(`${prefix}: timed out: ${detail}`, {
      errorType: "timeout",
      cause: rejection,
    });
  }
  return new PrometheusUnavailableError(`${prefix}: ${code}: ${detail}`, {
    errorType: code,
    cause: rejection,
    retryable: !PERMANENT_TRANSPORT_CODES.has(code),
  });
}

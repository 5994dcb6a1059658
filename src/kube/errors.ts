/**
 * Error classification for calls to the Kubernetes API. The client rejects with `ApiException`
 * (`.code`, `.body` holding the Status as text or as an object), watches fail with an `Error` carrying
 * `.statusCode`, and the network layer throws `TypeError("fetch failed")` with a `cause` that has a
 * `code` such as ECONNREFUSED. Retry decisions read these helpers instead of guessing at shapes.
 */

/** An API server rejection, with the HTTP status and the `reason` of the returned Status. */
export class KubeApiError extends Error {
  /** The HTTP status code (same name as the client's ApiException, so `.code` checks keep working). */
  readonly code: number;
  /** Status.reason, e.g. NotFound, Conflict, AlreadyExists, Invalid; empty when the body had none. */
  readonly reason: string;
  /** The answer's headers that matter to a retry (Retry-After), when the error came from an answer. */
  readonly headers: Record<string, string> | undefined;
  /** The answer's Status, when it had one (its details carry retryAfterSeconds). */
  readonly body: Record<string, unknown> | undefined;

  constructor(
    message: string,
    code: number,
    reason: string,
    options?: { cause?: unknown; headers?: Record<string, string>; body?: Record<string, unknown> },
  ) {
    super(message, options?.cause !== undefined ? { cause: options.cause } : undefined);
    this.name = "KubeApiError";
    this.code = code;
    this.reason = reason;
    this.headers = options?.headers;
    this.body = options?.body;
  }
}

const NETWORK_ERROR_CODES = new Set([
  "ECONNREFUSED",
  "ECONNRESET",
  "ECONNABORTED",
  "EPIPE",
  "ETIMEDOUT",
  "EAI_AGAIN",
  "ENETUNREACH",
  "EHOSTUNREACH",
  "UND_ERR_SOCKET",
  "UND_ERR_CONNECT_TIMEOUT",
  "UND_ERR_HEADERS_TIMEOUT",
  "UND_ERR_BODY_TIMEOUT",
  "UND_ERR_CLOSED",
]);

/** Statuses a retry will not fix: the request itself is wrong or not allowed. */
const TERMINAL_STATUSES = new Set([400, 401, 403, 405, 406, 413, 415, 422]);

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null;
}

/** The HTTP status of an API error (ApiException `.code`, watch `.statusCode`), if any. */
export function statusCodeOf(error: unknown): number | undefined {
  if (!isRecord(error)) return undefined;
  for (const field of ["code", "statusCode"] as const) {
    const value = error[field];
    if (typeof value === "number" && value >= 100 && value < 600) return value;
  }
  return undefined;
}

/** The Status object an API error carries, parsed when the client kept it as text. */
function statusBodyOf(error: unknown): Record<string, unknown> | undefined {
  if (!isRecord(error)) return undefined;
  const body = error.body;
  if (isRecord(body)) return body;
  if (typeof body === "string" && body.startsWith("{")) {
    try {
      const parsed: unknown = JSON.parse(body);
      return isRecord(parsed) ? parsed : undefined;
    } catch {
      return undefined;
    }
  }
  return undefined;
}

/**
 * Turns anything thrown into an `Error`. API rejections become a {@link KubeApiError} whose message is the
 * Status message (the client's own message dumps the headers); `context` (e.g. "Deployment ns/name: apply")
 * prefixes the message so that the error names the object.
 */
export function toError(error: unknown, context?: string): Error {
  const prefix = context !== undefined ? `${context}: ` : "";
  const code = statusCodeOf(error);
  if (code !== undefined && !(error instanceof KubeApiError)) {
    const body = statusBodyOf(error);
    const reason = typeof body?.reason === "string" ? body.reason : "";
    let detail = `HTTP ${code}`;
    if (typeof body?.message === "string" && body.message !== "") detail = `${body.message} (HTTP ${code})`;
    else if (error instanceof Error && !error.message.startsWith("HTTP-Code"))
      detail = `${error.message} (HTTP ${code})`;
    return new KubeApiError(`${prefix}${detail}`, code, reason, { cause: error });
  }
  if (error instanceof Error) {
    if (context === undefined) return error;
    if (error instanceof KubeApiError) {
      return new KubeApiError(`${prefix}${error.message}`, error.code, error.reason, { cause: error });
    }
    return new Error(`${prefix}${error.message}`, { cause: error });
  }
  if (isRecord(error) && typeof error.message === "string") {
    return new Error(`${prefix}${error.message}`, { cause: error });
  }
  return new Error(`${prefix}${String(error)}`, { cause: error });
}

/** 404: the object (or its namespace, or its kind) does not exist. */
export function isNotFound(error: unknown): boolean {
  return statusCodeOf(error) === 404;
}

/** 409: a resourceVersion precondition failed or the object already exists. */
export function isConflict(error: unknown): boolean {
  return statusCodeOf(error) === 409;
}

/** 410: the resourceVersion a watch asked for is too old; the cache must be listed again. */
export function isGone(error: unknown): boolean {
  return statusCodeOf(error) === 410;
}

/** A network failure below HTTP: no response at all, so the request may succeed when repeated. */
export function isNetworkError(error: unknown): boolean {
  for (let e: unknown = error, depth = 0; isRecord(e) && depth < 5; e = e.cause, depth++) {
    if (typeof e.code === "string" && NETWORK_ERROR_CODES.has(e.code)) return true;
    if (e.name === "TimeoutError" || e.name === "AbortError") return true;
    if (e instanceof TypeError && e.message === "fetch failed") return true;
  }
  return false;
}

/**
 * Worth retrying as is: network failures, 408 timeouts, 409 conflicts (re-read and try again),
 * 429 throttling and 5xx.
 */
export function isTransient(error: unknown): boolean {
  const code = statusCodeOf(error);
  if (code === undefined) return isNetworkError(error);
  return code === 408 || code === 409 || code === 429 || code >= 500;
}

/** The request is wrong or forbidden (400, 401, 403, 405, 406, 413, 415, 422): repeating it cannot help. */
export function isTerminal(error: unknown): boolean {
  const code = statusCodeOf(error);
  return code !== undefined && TERMINAL_STATUSES.has(code);
}

/** Retry-After as the API server sends it: whole seconds, or (rarely) an HTTP date. */
function parseRetryAfter(value: unknown, nowMs: number): number | undefined {
  if (typeof value === "number") return Number.isFinite(value) && value >= 0 ? value * 1000 : undefined;
  if (typeof value !== "string" || value.trim() === "") return undefined;
  const text = value.trim();
  if (/^\d+$/.test(text)) return Number(text) * 1000;
  const date = Date.parse(text);
  return Number.isNaN(date) ? undefined : Math.max(0, date - nowMs);
}

/**
 * How long the API server asked the client to wait before trying again (its Retry-After header, or the
 * Status's `details.retryAfterSeconds`), in milliseconds; undefined when it did not say. Priority and
 * fairness answers 429 with Retry-After when a client's share is used up: retrying sooner only queues again.
 * Looks through the causes, since errors are wrapped with the object they were about.
 */
export function retryAfterMs(error: unknown, nowMs: number = Date.now()): number | undefined {
  for (let e: unknown = error, depth = 0; isRecord(e) && depth < 5; e = e.cause, depth++) {
    const headers = e.headers;
    if (isRecord(headers)) {
      const key = Object.keys(headers).find((k) => k.toLowerCase() === "retry-after");
      const fromHeader = key === undefined ? undefined : parseRetryAfter(headers[key], nowMs);
      if (fromHeader !== undefined) return fromHeader;
    }
    const details = statusBodyOf(e)?.details;
    if (isRecord(details)) {
      const fromStatus = parseRetryAfter(details.retryAfterSeconds, nowMs);
      if (fromStatus !== undefined && fromStatus > 0) return fromStatus;
    }
  }
  return undefined;
}

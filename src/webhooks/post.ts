import pRetry from "p-retry";

/** How one POST is made: its timeout, and the retries after a first attempt that failed. */
export interface PostOptions {
  timeoutSeconds: number;
  retries: number;
  /** Delay before the first retry; each next one is twice as long. Default 200 ms. */
  minRetryDelayMs?: number;
  /** Extra headers (an idempotency key). */
  headers?: Record<string, string>;
}

/** What a webhook answered: its HTTP status (a redirect is an answer, never followed). */
export interface PostAnswer {
  status: number;
}

class NotOkError extends Error {
  override name = "NotOkError";
  constructor(readonly status: number) {
    super(`answered ${status}`);
  }
}

/**
 * POSTs `body` as JSON to `url`, retried with backoff while it fails (no answer, or not 2xx). Resolves the
 * last answer; rejects when no attempt got one. Redirects are not followed: where they lead was never
 * checked against the URL policy.
 */
export async function postJson(url: string, body: unknown, options: PostOptions): Promise<PostAnswer> {
  const payload = JSON.stringify(body);
  try {
    return await pRetry(
      async () => {
        const response = await fetch(url, {
          method: "POST",
          headers: { "content-type": "application/json", ...options.headers },
          body: payload,
          redirect: "manual",
          signal: AbortSignal.timeout(options.timeoutSeconds * 1000),
        });
        // The body is not used; reading it frees the connection.
        await response.arrayBuffer().catch(() => undefined);
        if (response.status < 200 || response.status >= 300) throw new NotOkError(response.status);
        return { status: response.status };
      },
      { retries: options.retries, minTimeout: options.minRetryDelayMs ?? 200, factor: 2, unref: true },
    );
  } catch (error) {
    if (error instanceof NotOkError) return { status: error.status };
    throw error;
  }
}

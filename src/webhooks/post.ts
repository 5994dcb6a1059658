import type { IncomingMessage } from "node:http";
import pRetry, { AbortError } from "p-retry";

// node:http(s) as CommonJS objects, not fetch or ES imports: both load Node's bundled undici (about 12 MiB of
// RSS), and undici's HTTP parser is WebAssembly, which a controller run with --jitless does not have (ADR 0017).
const nodeHttp = process.getBuiltinModule("node:http");
const nodeHttps = process.getBuiltinModule("node:https");

/**
 * The largest request body the controller POSTs. A webhook's `metadata` is the app author's input, sent as
 * is: without a bound, the controller would carry whatever an author writes to whichever receiver.
 */
export const MAX_REQUEST_BODY_BYTES = 64 * 1024;

/** How one POST is made: its timeout, and the retries after a first attempt that failed. */
export interface PostOptions {
  timeoutSeconds: number;
  retries: number;
  /** Delay before the first retry; each next one is twice as long. Default 200 ms. */
  minRetryDelayMs?: number;
  /** Extra headers (an idempotency key). */
  headers?: Record<string, string>;
  /** Asked before every attempt (the first and each retry) whether it may be made: a rate limit. */
  admit?: () => boolean;
}

/** What a webhook answered: its HTTP status (a redirect is an answer, never followed). */
export interface PostAnswer {
  status: number;
}

/** The body is over `MAX_REQUEST_BODY_BYTES`: nothing was sent. */
export class BodyTooLargeError extends Error {
  override readonly name = "BodyTooLargeError";
  constructor(readonly bytes: number) {
    super(`the request body would be ${bytes} bytes, over the ${MAX_REQUEST_BODY_BYTES}-byte limit; nothing was sent`);
  }
}

/** The rate limit refused an attempt: it was not made (nor any after it). */
export class RateLimitedError extends Error {
  override readonly name = "RateLimitedError";
  constructor() {
    super("not sent: the app's POSTs are over the controller's rate limit");
  }
}

class NotOkError extends Error {
  override name = "NotOkError";
  constructor(readonly status: number) {
    super(`answered ${status}`);
  }
}

/** The size in bytes of `body` as `postJson` sends it. */
export function bodyBytes(body: unknown): number {
  return Buffer.byteLength(JSON.stringify(body));
}

/**
 * POSTs `body` as JSON to `url`, retried with backoff while it fails (no answer, or not 2xx). Resolves the
 * last answer; rejects when no attempt got one. Redirects are not followed: where they lead was never
 * checked against the URL policy. Rejects with `BodyTooLargeError` (before anything is sent) for a body
 * over `MAX_REQUEST_BODY_BYTES`, and with `RateLimitedError` when `admit` refuses an attempt.
 */
export async function postJson(url: string, body: unknown, options: PostOptions): Promise<PostAnswer> {
  const payload = JSON.stringify(body);
  const bytes = Buffer.byteLength(payload);
  if (bytes > MAX_REQUEST_BODY_BYTES) throw new BodyTooLargeError(bytes);
  try {
    return await pRetry(
      async () => {
        if (options.admit !== undefined && !options.admit()) throw new AbortError(new RateLimitedError());
        const status = await postOnce(url, payload, options);
        if (status < 200 || status >= 300) throw new NotOkError(status);
        return { status };
      },
      { retries: options.retries, minTimeout: options.minRetryDelayMs ?? 200, factor: 2, unref: true },
    );
  } catch (error) {
    if (error instanceof NotOkError) return { status: error.status };
    throw error;
  }
}

/**
 * One POST; resolves the answer's status, within the timeout. The answer's body is never read: nothing of
 * it is used, and a receiver chosen by an app's author could make it as long as it likes, so the
 * connection is closed as soon as the status line and headers are in.
 */
function postOnce(url: string, payload: string, options: PostOptions): Promise<number> {
  const target = new URL(url);
  const send = target.protocol === "https:" ? nodeHttps.request : nodeHttp.request;
  return new Promise<number>((resolve, reject) => {
    const req = send(target, {
      method: "POST",
      headers: {
        "content-type": "application/json",
        "content-length": String(Buffer.byteLength(payload)),
        ...options.headers,
      },
      signal: AbortSignal.timeout(options.timeoutSeconds * 1000),
    });
    req.on("error", reject);
    req.on("response", (response: IncomingMessage) => {
      resolve(response.statusCode ?? 0);
      response.destroy();
    });
    req.end(payload);
  });
}

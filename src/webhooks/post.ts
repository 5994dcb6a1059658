import type { IncomingMessage } from "node:http";
import pRetry from "p-retry";

// node:http(s) as CommonJS objects, not fetch or ES imports: both load Node's bundled undici (about 12 MiB of
// RSS), and undici's HTTP parser is WebAssembly, which a controller run with --jitless does not have (ADR 0017).
const nodeHttp = process.getBuiltinModule("node:http");
const nodeHttps = process.getBuiltinModule("node:https");

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

/** One POST; resolves the answer's status once its body is read (the body is not used), within the timeout. */
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
      response.on("error", reject);
      response.on("end", () => resolve(response.statusCode ?? 0));
      response.resume();
    });
    req.end(payload);
  });
}

import { createInterface } from "node:readline";
import type { Readable } from "node:stream";

/**
 * How long a watch may stay silent before the client gives up on it: the last resort, for a watch whose
 * connection nothing else checks. Watches ask the server to end them after 5–10 minutes (`timeoutSeconds`, as
 * client-go does), so this only has to outlast the server's own end; bookmarks cannot be relied on to break
 * the silence sooner (one in 170 s was measured on a quiet watch). A dead connection is noticed sooner where
 * the controller's watches run over HTTP/2: a connection silent for 30 s is pinged, and closed when the PING
 * goes unanswered for 15 s (src/kube/http2-watches.ts). Watches through a proxy, or to a server that speaks
 * only HTTP/1.1, have only this. (client-node's `Watch` gives up after 30 s of silence, which would reopen
 * every quiet watch twice a minute, each time a request.)
 */
export const WATCH_INACTIVITY_TIMEOUT_MS = 11 * 60 * 1000;

/** A failed watch request: the HTTP status and the Status the server sent, as the error helpers read them. */
export class WatchRequestError extends Error {
  constructor(
    message: string,
    readonly statusCode: number,
    readonly body: string,
  ) {
    super(message);
    this.name = "WatchRequestError";
  }
}

/** The response to a watch request, whichever HTTP client made it. */
export interface OpenedWatch {
  status: number;
  statusText: string;
  /** The body as a byte stream. */
  body: Readable;
}

/**
 * Reads watch events of one collection from a long GET: newline-delimited JSON `{type, object}`, with an
 * inactivity timeout. `open` makes the request (with the signal that ends it); `done` is called exactly
 * once: with nothing when the server ends the watch or the caller aborts it, with an error otherwise (a
 * `TimeoutError` when it stayed silent too long, a {@link WatchRequestError} when the server refused it).
 */
export function streamWatch(
  path: string,
  open: (signal: AbortSignal) => Promise<OpenedWatch>,
  callback: (type: string, object: unknown) => void,
  done: (err: unknown) => void,
  inactivityTimeoutMs = WATCH_INACTIVITY_TIMEOUT_MS,
): { abort(): void } {
  const controller = new AbortController();
  let finished = false;
  let timer: NodeJS.Timeout | undefined;
  const finish = (err: unknown): void => {
    if (finished) return;
    finished = true;
    clearTimeout(timer);
    controller.abort();
    done(err);
  };
  const resetTimer = (): void => {
    clearTimeout(timer);
    timer = setTimeout(() => {
      finish(new DOMException(`watch ${path}: no data for ${inactivityTimeoutMs} ms`, "TimeoutError"));
    }, inactivityTimeoutMs);
    timer.unref();
  };

  const stream = async (): Promise<void> => {
    resetTimer();
    const response = await open(controller.signal);
    if (response.status !== 200) {
      const chunks: Buffer[] = [];
      for await (const chunk of response.body) chunks.push(Buffer.from(chunk as Buffer));
      const text = response.statusText || "watch failed";
      throw new WatchRequestError(text, response.status, Buffer.concat(chunks).toString("utf8"));
    }
    // A body that failed before it was read has told its error already: readline would wait for it forever.
    if (response.body.errored !== null) throw response.body.errored;
    const lines = createInterface({ input: response.body, crlfDelay: Infinity });
    for await (const line of lines) {
      resetTimer();
      if (finished) break;
      if (line.trim() === "") continue;
      let event: { type?: unknown; object?: unknown };
      try {
        event = JSON.parse(line) as { type?: unknown; object?: unknown };
      } catch {
        continue;
      }
      if (typeof event.type === "string") callback(event.type, event.object);
    }
  };
  // An abort or a timeout has already called `finish`; whatever the aborted stream then throws is moot.
  stream().then(
    () => finish(null),
    (err: unknown) => finish(err),
  );
  return { abort: () => finish(null) };
}

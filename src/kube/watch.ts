import { createInterface } from "node:readline";
import { Readable } from "node:stream";
import { STATUS_CODES } from "node:http";
import { HttpMethod, RequestContext, type KubeConfig } from "@kubernetes/client-node";
import { fetch } from "undici";
import type { Watcher } from "../controller/informer.js";

/**
 * How long a watch may stay silent before the client gives up on it. Watches ask the server to end them
 * after 5–10 minutes (`timeoutSeconds`, as client-go does) and the server sends bookmarks about once a
 * minute, so a quiet watch stays open at rest; this only has to outlast the server's own end.
 * (client-node's `Watch` gives up after 30 s of silence, which would reopen every watch twice a minute.)
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

/**
 * Streams watch events of one collection path: newline-delimited JSON `{type, object}` over a long GET,
 * authenticated by the KubeConfig (so a {@link PooledKubeConfig} shares its connections), with an inactivity
 * timeout of our choosing. `done` is called exactly once: with nothing when the server ends the watch or the
 * caller aborts it, with an error otherwise (a `TimeoutError` when it stayed silent too long).
 */
export class StreamWatch implements Watcher {
  constructor(
    private readonly kubeConfig: KubeConfig,
    private readonly inactivityTimeoutMs = WATCH_INACTIVITY_TIMEOUT_MS,
  ) {}

  async watch(
    path: string,
    queryParams: Record<string, string | number | boolean | undefined>,
    callback: (type: string, object: unknown) => void,
    done: (err: unknown) => void,
  ): Promise<{ abort(): void }> {
    const cluster = this.kubeConfig.getCurrentCluster();
    if (cluster === null) throw new Error("watch: the kubeconfig has no current cluster");
    const url = new URL(cluster.server + path);
    url.searchParams.set("watch", "true");
    for (const [key, value] of Object.entries(queryParams)) {
      if (value !== undefined) url.searchParams.set(key, String(value));
    }
    const context = new RequestContext(url.toString(), HttpMethod.GET);
    await this.kubeConfig.applySecurityAuthentication(context);

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
        finish(new DOMException(`watch ${path}: no data for ${this.inactivityTimeoutMs} ms`, "TimeoutError"));
      }, this.inactivityTimeoutMs);
      timer.unref();
    };

    const stream = async (): Promise<void> => {
      resetTimer();
      const response = await fetch(url, {
        method: "GET",
        headers: context.getHeaders(),
        dispatcher: context.getDispatcher(),
        signal: controller.signal,
      });
      if (response.status !== 200 || response.body === null) {
        const body = await response.text().catch(() => "");
        const text = response.statusText || STATUS_CODES[response.status] || "watch failed";
        throw new WatchRequestError(text, response.status, body);
      }
      const lines = createInterface({ input: Readable.fromWeb(response.body), crlfDelay: Infinity });
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
}

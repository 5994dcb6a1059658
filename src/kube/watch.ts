import { Readable } from "node:stream";
import { STATUS_CODES } from "node:http";
import { HttpMethod, RequestContext, type KubeConfig } from "@kubernetes/client-node";
import { fetch } from "undici";
import type { Watcher } from "./list-watch.js";
import { streamWatch, WATCH_INACTIVITY_TIMEOUT_MS, type WatchReadOptions } from "./watch-stream.js";

export { WATCH_INACTIVITY_TIMEOUT_MS, WatchRequestError } from "./watch-stream.js";

/**
 * Streams watch events of one collection path (see {@link streamWatch}) for the processes that talk to the
 * API server through client-node (tests, tools, the demo), authenticated by the KubeConfig (so a
 * {@link PooledKubeConfig} shares its connections). The controller itself watches through `KubeRest`.
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
    options?: WatchReadOptions,
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
    return streamWatch(
      path,
      async (signal) => {
        const response = await fetch(url, {
          method: "GET",
          headers: context.getHeaders(),
          dispatcher: context.getDispatcher(),
          signal,
        });
        return {
          status: response.status,
          statusText: response.statusText || STATUS_CODES[response.status] || "",
          body: response.body === null ? Readable.from([]) : Readable.fromWeb(response.body),
        };
      },
      callback,
      done,
      this.inactivityTimeoutMs,
      options,
    );
  }
}

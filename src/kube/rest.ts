/**
 * The controller's client for the API server: the few typed calls it makes (get, list, watch, create,
 * replace, merge patch, server-side apply, delete) as plain REST over node:http(s), every request on one
 * keep-alive connection pool (src/kube/transport.ts, ADR 0017), through the proxy kubectl would use
 * (src/kube/proxy.ts); watches over HTTP/2 with PINGs where the server allows it (src/kube/http2-watches.ts).
 */
import type { IncomingMessage } from "node:http";
import { finished } from "node:stream/promises";
import type { ListedMeta, Watcher } from "./list-watch.js";
import { ListItemReader } from "./list-items.js";
import {
  clientNodeEndpoint,
  isFallback,
  readKubeConfig,
  type ApiEndpoint,
  type KubeConfigSources,
  type TlsSettings,
} from "./kubeconfig.js";
import { Http2Watches, http2FromEnv, type Http2Settings, type Http2Tls } from "./http2-watches.js";
import { apiError, decoded, readText } from "./responses.js";
import { Transports } from "./transport.js";
import { streamWatch, WATCH_INACTIVITY_TIMEOUT_MS, type OpenedWatch, type WatchReadOptions } from "./watch-stream.js";

// Taken as CommonJS objects, not imported: an ES `import` of node:http reads every export of it, and its lazy
// `WebSocket` export loads Node's bundled undici (about 12 MiB of RSS the controller never uses, ADR 0017).
const nodeHttp = process.getBuiltinModule("node:http");
const nodeHttps = process.getBuiltinModule("node:https");
const { STATUS_CODES } = nodeHttp;

/** Names a collection (no `name`) or one object of a resource, and optionally a subresource of it. */
export interface ResourceRef {
  /** "" for the core group. */
  group: string;
  version: string;
  plural: string;
  namespace?: string | undefined;
  name?: string;
  subresource?: "status";
}

/** A list response, as an informer loads it. */
export interface ListOf<T> {
  metadata?: { resourceVersion?: string };
  items: T[];
}

export type Query = Record<string, string | number | boolean | undefined>;

export const CONTENT_TYPES = {
  json: "application/json",
  mergePatch: "application/merge-patch+json",
  /** Server-side apply; JSON is YAML, so the body is sent as JSON. */
  apply: "application/apply-patch+yaml",
} as const;

/** How long a request (other than a watch) may take before it fails as a network timeout. */
export const REQUEST_TIMEOUT_MS = 60_000;

/** The URL path of a resource: /api/v1/... for the core group, /apis/GROUP/VERSION/... otherwise. */
export function resourcePath(ref: ResourceRef): string {
  const parts = [ref.group === "" ? `/api/${ref.version}` : `/apis/${ref.group}/${ref.version}`];
  if (ref.namespace !== undefined) parts.push("namespaces", encodeURIComponent(ref.namespace));
  parts.push(ref.plural);
  if (ref.name !== undefined) parts.push(encodeURIComponent(ref.name));
  if (ref.subresource !== undefined) parts.push(ref.subresource);
  return parts.join("/");
}

function withQuery(path: string, query: Query | undefined): string {
  const params = new URLSearchParams();
  for (const [key, value] of Object.entries(query ?? {})) if (value !== undefined) params.set(key, String(value));
  const text = params.toString();
  return text === "" ? path : `${path}?${text}`;
}

/** What a request was, as counted: a watch, or its HTTP method (a list is a `get`). */
export type RequestVerb = "get" | "watch" | "post" | "put" | "patch" | "delete";

export interface KubeRestOptions {
  requestTimeoutMs?: number;
  /** A watch that stays silent this long is ended with a TimeoutError (see streamWatch). */
  watchInactivityTimeoutMs?: number;
  /** How watches use HTTP/2 (src/kube/http2-watches.ts); client-go's defaults, or its environment's by `connect`. */
  http2?: Http2Settings;
  /** Told of every request sent, watches included (the controller counts them as a metric). */
  onRequest?: (verb: RequestVerb) => void;
  /** The User-Agent of every request and watch: names this client in the API server's audit log. */
  userAgent?: string;
  /** Told once, when the first connection is made, how the API server is reached (proxy, CA roots). */
  log?: { info(fields: Record<string, unknown>, message: string): void };
}

/**
 * REST calls to one API server as one user. Requests share one keep-alive connection pool (an HTTP/1.1
 * agent: a request takes any idle connection); watches share HTTP/2 connections, pinged while open
 * (src/kube/http2-watches.ts), or where HTTP/2 is not used hold a connection of the pool each while open;
 * {@link close} ends them, and a request after `close` opens a new pool. When the user's client certificate
 * changes (an exec plugin's, see src/kube/exec-plugin.ts), new requests go to a new pool with it; the old pool's
 * requests and watches finish on their connections, which are then closed. A request refused (401) with a
 * credential the endpoint then renews (an exec plugin's) is sent once more with the new one; a watch is not, it
 * ends with the 401 and the informer's next watch gets the new credential.
 */
export class KubeRest implements Watcher {
  readonly #endpoint: Promise<ApiEndpoint>;
  readonly #requestTimeoutMs: number;
  readonly #watchInactivityTimeoutMs: number;
  readonly #onRequest: ((verb: RequestVerb) => void) | undefined;
  readonly #userAgent: string | undefined;
  /** The connection pools of requests (not HTTP/2 watches). */
  readonly #transports: Transports;
  /** 401 answers after which the endpoint renewed the credential they refused. */
  readonly #renewed = new WeakSet<IncomingMessage>();
  readonly #http2: Required<Http2Settings>;
  /** The HTTP/2 connections of watches for the endpoint's TLS settings `from`. */
  #watches: { from: TlsSettings; pool: Http2Watches } | undefined;
  /** Those of earlier client certificates whose connections are still open. */
  readonly #retiredWatches = new Set<Http2Watches>();

  constructor(endpoint: ApiEndpoint | Promise<ApiEndpoint>, options: KubeRestOptions = {}) {
    this.#endpoint = Promise.resolve(endpoint);
    // A failed fallback is reported by the first request; an unobserved rejection must not end the process.
    this.#endpoint.catch(() => undefined);
    this.#requestTimeoutMs = options.requestTimeoutMs ?? REQUEST_TIMEOUT_MS;
    this.#watchInactivityTimeoutMs = options.watchInactivityTimeoutMs ?? WATCH_INACTIVITY_TIMEOUT_MS;
    this.#onRequest = options.onRequest;
    this.#transports = new Transports(options.log);
    this.#userAgent = options.userAgent;
    this.#http2 = { ...http2FromEnv({}), ...options.http2 };
  }

  /**
   * A client for the kubeconfig at `path` (see {@link readKubeConfig}); kubeconfigs read only by
   * client-node are handed to it, and it is imported only then.
   */
  static connect(path?: string, sources?: KubeConfigSources, options?: KubeRestOptions): KubeRest {
    const read = readKubeConfig(path, sources);
    const http2 = http2FromEnv(sources?.env ?? process.env);
    return new KubeRest(isFallback(read) ? clientNodeEndpoint(read, sources?.env) : read, { http2, ...options });
  }

  /** The endpoint's server URL. */
  async server(): Promise<string> {
    return (await this.#endpoint).server;
  }

  get<T>(ref: ResourceRef): Promise<T> {
    return this.request<T>("GET", resourcePath(ref));
  }

  async list<T>(ref: ResourceRef, query: { labelSelector?: string | undefined } = {}): Promise<ListOf<T>> {
    const items: T[] = [];
    const list = await this.listEach<T>(ref, query, (item) => items.push(item));
    return { ...list, items };
  }

  /**
   * Lists, handing each item to `each` as soon as it has arrived, parsed on its own (ListItemReader, ADR 0019);
   * resolves with the list's own metadata once every item is in. A list that fails part way rejects after
   * some items were handed over: whoever keeps them keeps them only once the list resolves.
   * `withoutManagedFields`: items are handed over without `metadata.managedFields`, which is then not parsed
   * where the item's layout allows (ListItemReader).
   */
  async listEach<T>(
    ref: ResourceRef,
    query: { labelSelector?: string | undefined },
    each: (item: T) => void,
    options: { withoutManagedFields?: boolean } = {},
  ): Promise<ListedMeta> {
    // Compressed: the API server compresses only answers over 128 KB, and writes a list item by item, one
    // HTTP chunk each; read in JavaScript, each chunk costs more than inflating it (ADR 0019).
    const response = await this.#sendFor2xx("GET", resourcePath(ref), query, {
      accept: CONTENT_TYPES.json,
      "accept-encoding": "gzip",
    });
    const body = decoded(response);
    const reader = new ListItemReader((item) => each(item as T), options);
    // 'data' events rather than `for await`: an async iterator costs a promise and several ticks per chunk,
    // about 0.3 s of a 5,000-app start-up under the controller's V8 flags (ADR 0019).
    body.on("data", (chunk: Buffer) => {
      try {
        reader.push(chunk);
      } catch (err) {
        body.destroy(err instanceof Error ? err : new Error(String(err)));
      }
    });
    await finished(body);
    const { metadata } = reader.end() as { metadata?: ListedMeta["metadata"] };
    return metadata === undefined ? {} : { metadata };
  }

  create<T>(ref: ResourceRef, body: unknown): Promise<T> {
    return this.request<T>("POST", resourcePath(ref), { body });
  }

  replace<T>(ref: ResourceRef, body: unknown): Promise<T> {
    return this.request<T>("PUT", resourcePath(ref), { body });
  }

  mergePatch<T>(ref: ResourceRef, patch: unknown, query?: Query): Promise<T> {
    return this.request<T>("PATCH", resourcePath(ref), { body: patch, contentType: CONTENT_TYPES.mergePatch, query });
  }

  /** Server-side apply of `body` as `fieldManager`, forcing conflicts when `force`. */
  apply<T>(
    ref: ResourceRef,
    body: unknown,
    query: { fieldManager: string; force?: boolean; dryRun?: "All" },
  ): Promise<T> {
    return this.request<T>("PATCH", resourcePath(ref), { body, contentType: CONTENT_TYPES.apply, query });
  }

  /** Deletes; `preconditions` make the server refuse (409) unless the object is still at that version. */
  delete(
    ref: ResourceRef,
    query?: { propagationPolicy?: "Background" | "Foreground" | "Orphan" },
    preconditions?: { resourceVersion?: string },
  ): Promise<unknown> {
    return this.request("DELETE", resourcePath(ref), {
      query,
      ...(preconditions && { body: { apiVersion: "v1", kind: "DeleteOptions", preconditions } }),
    });
  }

  /** One request; resolves with the parsed body of a 2xx answer, rejects with a KubeApiError otherwise. */
  async request<T>(
    method: string,
    path: string,
    options: { query?: Query | undefined; body?: unknown; contentType?: string } = {},
  ): Promise<T> {
    const body = options.body === undefined ? undefined : JSON.stringify(options.body);
    const headers: Record<string, string> = { accept: CONTENT_TYPES.json };
    if (body !== undefined) {
      headers["content-type"] = options.contentType ?? CONTENT_TYPES.json;
      headers["content-length"] = String(Buffer.byteLength(body));
    }
    const text = await readText(await this.#sendFor2xx(method, path, options.query, headers, body));
    return (text === "" ? undefined : JSON.parse(text)) as T;
  }

  /** Sends one request (not a watch); resolves with a 2xx answer, its body unread, else rejects with a KubeApiError. */
  async #sendFor2xx(
    method: string,
    path: string,
    query: Query | undefined,
    headers: Record<string, string>,
    body?: string,
  ): Promise<IncomingMessage> {
    const send = () => this.#send(method, withQuery(path, query), headers, body, undefined, this.#requestTimeoutMs);
    let response = await send();
    // The API server authenticates before it acts, so a request refused with 401 did nothing: sent again once with
    // the renewed credential. (client-go renews it too, but hands that 401 to its caller.)
    if (this.#renewed.has(response)) {
      response.resume();
      response = await send();
    }
    const code = response.statusCode ?? 0;
    if (code < 200 || code >= 300) {
      throw apiError(method, path, code, await readText(response), response.headers["retry-after"]);
    }
    return response;
  }

  /** Streams watch events of one collection path (see {@link streamWatch}). */
  watch(
    path: string,
    queryParams: Query,
    callback: (type: string, object: unknown) => void,
    done: (err: unknown) => void,
    options?: WatchReadOptions,
  ): Promise<{ abort(): void }> {
    const target = withQuery(path, { ...queryParams, watch: true });
    return Promise.resolve(
      streamWatch(
        path,
        async (signal) => {
          const opened = await this.#watchOverHttp2(target, signal);
          if (opened !== undefined) return opened;
          const response = await this.#send("GET", target, { accept: CONTENT_TYPES.json }, undefined, signal, 0);
          return {
            status: response.statusCode ?? 0,
            statusText: response.statusMessage ?? STATUS_CODES[response.statusCode ?? 0] ?? "",
            body: response,
          };
        },
        callback,
        done,
        this.#watchInactivityTimeoutMs,
        options,
      ),
    );
  }

  /**
   * A watch over HTTP/2, its connection pinged (src/kube/http2-watches.ts), or undefined where watches stay on
   * HTTP/1.1: an http:// server, a server that does not choose h2, HTTP/2 turned off (DISABLE_HTTP2), or a proxy.
   * A proxy's tunnel is its agent's (src/kube/proxy.ts), which those libraries hand only to an http.request: none
   * offers a public way to run HTTP/2 over it, so through a proxy a dead watch is noticed only by the inactivity
   * timeout of streamWatch (ADR 0017).
   */
  async #watchOverHttp2(target: string, signal: AbortSignal): Promise<OpenedWatch | undefined> {
    const endpoint = await this.#endpoint;
    if (this.#http2.disabled || endpoint.proxy !== undefined || !endpoint.server.startsWith("https:")) return undefined;
    const auth = await endpoint.authenticate();
    // Read after authenticate, which may have rotated the client certificate, and with the pool built for it.
    const from = endpoint.tls;
    const { secureContext, rejectUnauthorized = true, servername } = (await this.#transports.for(endpoint)).tls;
    if (secureContext === undefined) return undefined;
    const tls = { secureContext, rejectUnauthorized, ...(servername !== undefined && { servername }) };
    const headers = { ...this.#identified({ accept: CONTENT_TYPES.json }), ...auth };
    const pool = this.#watchesFor(from, endpoint.server, tls);
    const opened = await pool.open(target, headers, signal, () => this.#onRequest?.("watch"));
    if (opened !== undefined) await this.#renewIfRefused(endpoint, auth, opened.status, () => opened.body.destroy());
    return opened;
  }

  /** `headers` with this client's User-Agent, when it has one. */
  #identified(headers: Record<string, string>): Record<string, string> {
    return this.#userAgent === undefined ? headers : { ...headers, "user-agent": this.#userAgent };
  }

  /**
   * After a 401 to a request sent with `auth`, the endpoint renews the credential (an exec plugin run again)
   * before the answer is handed on, so that whoever sends next (a watch reopened) has the new one. Whether it
   * was renewed; a renewal that fails discards the answer and throws.
   */
  async #renewIfRefused(
    endpoint: ApiEndpoint,
    auth: Record<string, string>,
    status: number | undefined,
    discard: () => void,
  ): Promise<boolean> {
    if (status !== 401 || endpoint.refused === undefined) return false;
    return await endpoint.refused(auth).catch((error: unknown) => {
      discard();
      throw error;
    });
  }

  /** The watches' HTTP/2 pool for the TLS settings `from`: the one in use, or a new one that retires it. */
  #watchesFor(from: TlsSettings, server: string, tls: Http2Tls): Http2Watches {
    const current = this.#watches;
    if (current?.from === from) return current.pool;
    const pool = new Http2Watches(server, tls, this.#http2);
    this.#watches = { from, pool };
    if (current !== undefined) {
      current.pool.retire();
      for (const old of this.#retiredWatches) if (!old.connected) this.#retiredWatches.delete(old);
      if (current.pool.connected) this.#retiredWatches.add(current.pool);
    }
    return pool;
  }

  /** Ends every connection; later requests open new ones. */
  async close(): Promise<void> {
    this.#watches?.pool.destroy();
    this.#watches = undefined;
    for (const pool of this.#retiredWatches) pool.destroy();
    this.#retiredWatches.clear();
    await this.#transports.close();
  }

  async #send(
    method: string,
    target: string,
    headers: Record<string, string>,
    body: string | undefined,
    signal: AbortSignal | undefined,
    timeoutMs: number,
  ): Promise<IncomingMessage> {
    headers = this.#identified(headers);
    const endpoint = await this.#endpoint;
    const auth = await endpoint.authenticate();
    const url = new URL(endpoint.server + target);
    const https = url.protocol === "https:";
    const { agent, tls } = await this.#transports.for(endpoint);
    const send = https ? nodeHttps.request : nodeHttp.request;
    this.#onRequest?.(
      method === "GET" && /[?&]watch=true(&|$)/.test(target) ? "watch" : (method.toLowerCase() as RequestVerb),
    );
    const response = await new Promise<IncomingMessage>((resolve, reject) => {
      const req = send(url, { method, headers: { ...headers, ...auth }, agent, ...tls, ...(signal ? { signal } : {}) });
      req.on("response", resolve);
      req.on("error", reject);
      if (timeoutMs > 0) {
        req.setTimeout(timeoutMs, () => {
          req.destroy(
            Object.assign(new Error(`${method} ${target}: no answer in ${timeoutMs} ms`), { code: "ETIMEDOUT" }),
          );
        });
      }
      req.end(body);
    });
    if (await this.#renewIfRefused(endpoint, auth, response.statusCode, () => response.resume())) {
      this.#renewed.add(response);
    }
    return response;
  }
}

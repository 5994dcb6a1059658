/**
 * How requests reach the API server: one keep-alive connection pool (an HTTP/1.1 agent: a request takes any idle
 * connection) through the proxy kubectl would use (src/kube/proxy.ts), and the TLS each request is given, for the
 * endpoint's current TLS settings (ADR 0017). When the client certificate changes, new requests go to a new pool;
 * the old pool's requests finish on their connections, which are then closed.
 */
import type { Agent as HttpAgent } from "node:http";
import type { SecureContext } from "node:tls";
import { serverRoots, systemRoots } from "./ca-roots.js";
import type { ApiEndpoint, TlsSettings } from "./kubeconfig.js";
import { proxyAgent, proxyForLog, type PoolOptions } from "./proxy.js";

// Taken as CommonJS objects, not imported: an ES `import` of node:http reads every export of it, and its lazy
// `WebSocket` export loads Node's bundled undici (about 12 MiB of RSS the controller never uses, ADR 0017).
const nodeHttp = process.getBuiltinModule("node:http");
const nodeHttps = process.getBuiltinModule("node:https");
const nodeTls = process.getBuiltinModule("node:tls");

/** How requests reach the API server: the connection pool and each request's TLS options. */
export interface Transport {
  agent: HttpAgent;
  /** TLS to the API server, given with each request, so that it applies inside a proxy's tunnel too. */
  tls: { secureContext: SecureContext; rejectUnauthorized: boolean; servername?: string } | Record<string, never>;
}

const POOL: PoolOptions = { keepAlive: true, scheduling: "lifo" };

/**
 * Lets `agent`'s requests in flight (watches too) finish on their connections but keeps none of them: idle
 * ones are closed now, busy ones once they are free.
 */
function retire(agent: HttpAgent): void {
  agent.maxFreeSockets = 0;
  for (const sockets of Object.values(agent.freeSockets)) for (const socket of sockets ?? []) socket.destroy();
}

const busy = (agent: HttpAgent): boolean =>
  Object.keys(agent.sockets).length > 0 || Object.keys(agent.requests).length > 0;

/** The pools of requests to one API server: the one for its current TLS settings, and those retired. */
export class Transports {
  readonly #log: { info(fields: Record<string, unknown>, message: string): void } | undefined;
  #logged = false;
  /** The pool for the endpoint's TLS settings `from` (once built). */
  #transport: { from: TlsSettings; ready: Promise<Transport> } | undefined;
  /** Pools of earlier client certificates whose connections are still open. */
  readonly #retired = new Set<HttpAgent>();

  /** `log` is told once, when the first pool is built, how the API server is reached (proxy, CA roots). */
  constructor(log: { info(fields: Record<string, unknown>, message: string): void } | undefined) {
    this.#log = log;
  }

  /** The pool for the endpoint's current TLS settings: the one in use, or a new one that retires it. */
  for(endpoint: ApiEndpoint): Promise<Transport> {
    const current = this.#transport;
    if (current?.from === endpoint.tls) return current.ready;
    const ready = this.#new(endpoint);
    this.#transport = { from: endpoint.tls, ready };
    if (current !== undefined) {
      void current.ready.then(
        ({ agent }) => {
          retire(agent);
          for (const old of this.#retired) if (!busy(old)) this.#retired.delete(old);
          if (busy(agent)) this.#retired.add(agent);
        },
        () => undefined,
      );
    }
    return ready;
  }

  async #new(endpoint: ApiEndpoint): Promise<Transport> {
    const https = endpoint.server.startsWith("https:");
    const roots = https ? serverRoots(endpoint.tls, endpoint.server) : undefined;
    const { cert, key, rejectUnauthorized, servername } = endpoint.tls;
    // One secure context per pool: its roots and client certificate are parsed once, not for each connection.
    const tls: Transport["tls"] = https
      ? {
          secureContext: nodeTls.createSecureContext({
            ...(roots?.ca !== undefined ? { ca: roots.ca } : {}),
            ...(cert !== undefined ? { cert } : {}),
            ...(key !== undefined ? { key } : {}),
          }),
          rejectUnauthorized,
          ...(servername !== undefined ? { servername } : {}),
        }
      : {};
    const { proxy } = endpoint;
    // LIFO: the most recently used idle connection is reused, so the others can time out at rest.
    const agent =
      proxy === undefined
        ? https
          ? new nodeHttps.Agent(POOL)
          : new nodeHttp.Agent(POOL)
        : await proxyAgent(proxy, https, POOL, () => systemRoots(`the proxy ${proxyForLog(proxy)}`));
    if (!this.#logged) {
      this.#logged = true;
      this.#log?.info(
        {
          server: endpoint.server,
          proxy: proxy === undefined ? "none" : proxyForLog(proxy),
          ...(proxy !== undefined ? { proxyFrom: proxy.from } : {}),
          ...(roots !== undefined ? { caRoots: roots.source } : {}),
        },
        "connecting to the API server",
      );
    }
    return { agent, tls };
  }

  /** Ends every connection of every pool; a later request builds a new one. */
  async close(): Promise<void> {
    const current = this.#transport;
    this.#transport = undefined;
    for (const agent of this.#retired) agent.destroy();
    this.#retired.clear();
    if (current !== undefined) (await current.ready.catch(() => undefined))?.agent.destroy();
  }
}

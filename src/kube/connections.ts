import { KubeConfig, type RequestContext } from "@kubernetes/client-node";

type Dispatcher = NonNullable<ReturnType<RequestContext["getDispatcher"]>>;

/**
 * A KubeConfig whose requests share one connection pool per cluster and user.
 *
 * client-node 2.0 hands every request it authenticates a new undici dispatcher, so each API call and each
 * watch would open a fresh TLS connection: the bulk of a busy controller's CPU, and needless work for the API
 * server. This subclass keeps the dispatcher made for the first request to a cluster/user and gives it to
 * every later request of the same pair, through client-node's public `applySecurityAuthentication` hook
 * (which every generated API client and every watch calls). The dispatcher carries only the TLS settings
 * (CA, client certificate), which do not change while the process runs; credentials that do (bearer
 * tokens) still travel in headers set per request. The dispatchers it does not keep were never used and
 * hold no connection; they are left alone.
 *
 * Any number of API clients and watches may be built on one instance; {@link close} ends its connections,
 * and a request after `close` opens a new pool.
 */
export class PooledKubeConfig extends KubeConfig {
  readonly #pools = new Map<string, Dispatcher>();

  override async applySecurityAuthentication(context: RequestContext): Promise<void> {
    await super.applySecurityAuthentication(context);
    const made = context.getDispatcher();
    // None for plain http without TLS settings: fetch's global dispatcher pools those already.
    if (made === undefined) return;
    const key = this.#poolKey();
    const pool = this.#pools.get(key);
    if (pool === undefined) this.#pools.set(key, made);
    else context.setDispatcher(pool);
  }

  /** Open pools (one per cluster/user used so far). */
  get poolCount(): number {
    return this.#pools.size;
  }

  /** Closes every pool once its requests have finished; later requests start new ones. */
  async close(): Promise<void> {
    const pools = [...this.#pools.values()];
    this.#pools.clear();
    await Promise.all(pools.map((pool) => pool.close().catch(() => undefined)));
  }

  #poolKey(): string {
    const cluster = this.getCurrentCluster();
    return JSON.stringify([cluster?.name ?? "", cluster?.server ?? "", this.getCurrentUser()?.name ?? ""]);
  }
}

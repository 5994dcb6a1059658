import type { KubeConfig, RequestContext, Watch } from "@kubernetes/client-node";

type Dispatcher = NonNullable<ReturnType<RequestContext["getDispatcher"]>>;

/**
 * Makes every request of `kubeConfig` share one connection pool per context.
 *
 * client-node 2.0.1 builds a new undici Agent for each request it authenticates, so every API call and
 * every watch opens a fresh TLS connection (with a fresh TLS context): the bulk of a busy controller's CPU,
 * and needless work for the API server. The Agent carries only the TLS settings (CA, client certificate),
 * which do not change while the process runs; credentials that do (bearer tokens) travel in headers that
 * are still set per request.
 */
export function shareConnections(kubeConfig: KubeConfig): KubeConfig {
  const pools = new Map<string, Dispatcher>();
  const authenticate = kubeConfig.applySecurityAuthentication.bind(kubeConfig);
  kubeConfig.applySecurityAuthentication = async (context) => {
    await authenticate(context);
    const fresh = context.getDispatcher();
    if (fresh === undefined) return;
    const key = kubeConfig.getCurrentContext();
    const shared = pools.get(key);
    if (shared === undefined) {
      pools.set(key, fresh);
      return;
    }
    context.setDispatcher(shared);
    // The fresh Agent never connected; closing it releases nothing but keeps the intent clear.
    void fresh.close().catch(() => undefined);
  };
  return kubeConfig;
}

/**
 * How long a watch may stay silent before the client gives up on it. client-node aborts a watch after 30 s
 * without data, which at rest (no changes, bookmarks about once a minute) reopens every watch twice a
 * minute. Watches instead ask the server to end them after 5–10 minutes (`timeoutSeconds`, as client-go
 * does); this only has to outlast that.
 */
export const WATCH_INACTIVITY_TIMEOUT_MS = 11 * 60 * 1000;

export function withWatchInactivityTimeout(watch: Watch, timeoutMs = WATCH_INACTIVITY_TIMEOUT_MS): Watch {
  // A private field in the typings, but the only knob client-node offers.
  (watch as unknown as { requestTimeoutMs: number }).requestTimeoutMs = timeoutMs;
  return watch;
}

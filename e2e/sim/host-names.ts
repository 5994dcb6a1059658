/**
 * Host names as Istio and Envoy compare them: Istio's wildcard overlap of a route's and a listener's
 * hostnames (istio.io/istio pkg/config/host/name.go), and how Envoy picks the virtual host a request's Host
 * header falls in (exact domain first, then the longest `*.suffix`, then `*`: envoy
 * source/common/router/config_impl.cc, RouteMatcher::findVirtualHost). Pure.
 */

const isWildcard = (h: string) => h.startsWith("*");

/**
 * Whether two host names overlap (name.go, Name.Matches): equal when neither is a wildcard; a wildcard
 * `*.example.com` covers every name ending in `.example.com`; two wildcards overlap when one's suffix ends
 * the other's. `*` overlaps everything.
 */
export function hostsOverlap(a: string, b: string): boolean {
  if (isWildcard(a)) {
    if (isWildcard(b)) {
      return a.length < b.length ? b.slice(1).endsWith(a.slice(1)) : a.slice(1).endsWith(b.slice(1));
    }
    return b.endsWith(a.slice(1));
  }
  if (isWildcard(b)) return a.endsWith(b.slice(1));
  return a === b;
}

/** The narrower of two overlapping host names (a name over a wildcard, the longer of two wildcards). */
export function narrowerHost(a: string, b: string): string {
  if (!isWildcard(a)) return a;
  if (!isWildcard(b)) return b;
  return a.length >= b.length ? a : b;
}

/**
 * How well a virtual host domain fits a request's Host: undefined when it does not match; else a rank, higher
 * wins: an exact domain beats every wildcard, a longer `*.suffix` a shorter one, and `*` comes last.
 */
export function domainFit(domain: string, host: string): number | undefined {
  const d = domain.toLowerCase();
  const h = host.toLowerCase();
  if (d === "*") return 0;
  if (isWildcard(d)) return h.endsWith(d.slice(1)) && h.length > d.length - 1 ? d.length : undefined;
  return d === h ? Number.MAX_SAFE_INTEGER : undefined;
}

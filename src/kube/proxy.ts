/**
 * Which proxy the connections to the API server go through, by kubectl's rules, and the http.Agent that
 * tunnels through it.
 *
 * kubectl (client-go) takes the cluster's `proxy-url` when the kubeconfig sets one, and otherwise Go's
 * `http.ProxyFromEnvironment` (golang.org/x/net/http/httpproxy): HTTPS_PROXY for an https server,
 * HTTP_PROXY for an http one (upper case before lower case), never for `localhost` or a loopback address,
 * and not for a host NO_PROXY names. Those rules are written out here because proxy-from-env, the usual
 * package for them, differs from Go where it matters: it reads ALL_PROXY, prefers the lower-case variables,
 * takes a scheme-less `HTTPS_PROXY=host:port` as an https proxy (Go: http), does not let `foo.com` match
 * `bar.foo.com`, has no CIDRs, proxies loopback, and reads only `process.env`.
 *
 * The tunnel itself is the proxy-agents' (https-proxy-agent, http-proxy-agent, socks-proxy-agent), imported
 * only when a proxy is used.
 */
import type { Agent as HttpAgent } from "node:http";
import { BlockList, isIP } from "node:net";
import { domainToASCII } from "node:url";

/** The proxy chosen for one API server, and where it was set. */
export interface ProxyChoice {
  url: URL;
  /** "proxy-url" (the kubeconfig's cluster) or the environment variable it came from, e.g. "HTTPS_PROXY". */
  from: string;
}

/**
 * Go's parseProxy: a URL with a scheme as it is, `host[:port]` as `http://host[:port]`. A scheme other than
 * http, https or socks5 is kept, and fails when a connection is made (as in Go).
 */
function parseEnvProxy(text: string): URL | undefined {
  try {
    return new URL(text.includes("://") ? text : `http://${text}`);
  } catch {
    return undefined;
  }
}

/** client-go's parseProxyURL for the kubeconfig's `proxy-url`: http, https or socks5, else an error. */
export function parseProxyUrl(text: string, cluster: string): URL {
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    throw new Error(`kubeconfig: cluster "${cluster}": proxy-url could not be parsed`);
  }
  if (!["http:", "https:", "socks5:"].includes(url.protocol)) {
    throw new Error(
      `kubeconfig: cluster "${cluster}": proxy-url has the unsupported scheme "${url.protocol.slice(0, -1)}", must be http, https, or socks5`,
    );
  }
  return url;
}

/** The first of `names` set to a non-empty value, as Go's getEnvAny. */
function envAny(env: Record<string, string | undefined>, ...names: string[]): [string, string] | undefined {
  for (const name of names) {
    const value = env[name];
    if (value !== undefined && value !== "") return [name, value];
  }
  return undefined;
}

/** Go's net.SplitHostPort: `host:port` or `[ipv6]:port`; undefined when there is no port part. */
function splitHostPort(text: string): [string, string] | undefined {
  if (text.startsWith("[")) {
    const end = text.indexOf("]");
    if (end < 0 || text[end + 1] !== ":") return undefined;
    return [text.slice(1, end), text.slice(end + 2)];
  }
  const colon = text.lastIndexOf(":");
  if (colon < 0 || text.indexOf(":") !== colon) return undefined;
  return [text.slice(0, colon), text.slice(colon + 1)];
}

type Matcher = (host: string, port: string, ip: string | undefined) => boolean;

const family = (ip: string): "ipv4" | "ipv6" => (isIP(ip) === 6 ? "ipv6" : "ipv4");

/** One NO_PROXY entry as Go's httpproxy reads it: `*`, an IP or CIDR, a domain, each optionally with a port. */
function noProxyMatcher(entry: string): Matcher | undefined {
  const p = entry.trim().toLowerCase();
  if (p === "") return undefined;
  if (p === "*") return () => true;
  const cidr = /^([^/]+)\/(\d{1,3})$/.exec(p);
  if (cidr?.[1] !== undefined && isIP(cidr[1]) !== 0) {
    const bits = Number(cidr[2]);
    if (bits > (isIP(cidr[1]) === 6 ? 128 : 32)) return undefined;
    const list = new BlockList();
    list.addSubnet(cidr[1], bits, family(cidr[1]));
    return (_host, _port, ip) => ip !== undefined && list.check(ip, family(ip));
  }
  const split = splitHostPort(p);
  const pport = split?.[1] ?? "";
  let phost = split?.[0] ?? p;
  if (split !== undefined && phost === "") return undefined;
  if (phost.startsWith("[") && phost.endsWith("]")) phost = phost.slice(1, -1);
  if (isIP(phost) !== 0) {
    const list = new BlockList();
    list.addAddress(phost, family(phost));
    return (_host, port, ip) => ip !== undefined && list.check(ip, family(ip)) && (pport === "" || pport === port);
  }
  if (phost === "") return undefined;
  // foo.com matches foo.com and bar.foo.com; .foo.com and *.foo.com only bar.foo.com.
  if (phost.startsWith("*.")) phost = phost.slice(1);
  const matchHost = !phost.startsWith(".");
  if (matchHost) phost = `.${phost}`;
  // eslint-disable-next-line no-control-regex
  if (/[^\x00-\x7f]/.test(phost)) phost = `.${domainToASCII(phost.slice(1)) || phost.slice(1)}`;
  const suffix = phost;
  return (host, port) =>
    (host.endsWith(suffix) || (matchHost && host === suffix.slice(1))) && (pport === "" || pport === port);
}

/**
 * The proxy of Go's `http.ProxyFromEnvironment` for `server` (an http or https URL), or undefined when it is
 * reached directly. Variables that do not parse are ignored, as Go ignores them.
 */
export function proxyFromEnvironment(server: URL, env: Record<string, string | undefined>): ProxyChoice | undefined {
  const https = server.protocol === "https:";
  const set = https ? envAny(env, "HTTPS_PROXY", "https_proxy") : envAny(env, "HTTP_PROXY", "http_proxy");
  if (set === undefined || (!https && server.protocol !== "http:")) return undefined;
  const url = parseEnvProxy(set[1]);
  if (url === undefined) return undefined;
  const host = server.hostname.replace(/^\[|\]$/g, "");
  const port = server.port !== "" ? server.port : https ? "443" : "80";
  const ip = isIP(host) !== 0 ? host : undefined;
  if (host === "localhost") return undefined;
  if (ip !== undefined) {
    const loopback = new BlockList();
    loopback.addSubnet("127.0.0.0", 8, "ipv4");
    loopback.addAddress("::1", "ipv6");
    if (loopback.check(ip, family(ip))) return undefined;
  }
  const noProxy = envAny(env, "NO_PROXY", "no_proxy")?.[1] ?? "";
  for (const entry of noProxy.split(",")) {
    if (noProxyMatcher(entry)?.(host, port, ip) === true) return undefined;
  }
  // Go refuses HTTP_PROXY in a CGI process, where a request's Proxy header would have set it.
  if (!https && env.REQUEST_METHOD !== undefined && env.REQUEST_METHOD !== "") {
    throw new Error("refusing to use HTTP_PROXY value in CGI environment (REQUEST_METHOD is set)");
  }
  return { url, from: set[0] };
}

/**
 * The proxy for `server` as kubectl chooses it: the cluster's `proxy-url` (for every server, loopback too),
 * else the environment's.
 */
export function chooseProxy(
  server: string,
  proxyUrl: string | undefined,
  cluster: string,
  env: Record<string, string | undefined>,
): ProxyChoice | undefined {
  if (proxyUrl !== undefined && proxyUrl !== "") return { url: parseProxyUrl(proxyUrl, cluster), from: "proxy-url" };
  let url: URL;
  try {
    url = new URL(server);
  } catch {
    return undefined;
  }
  return proxyFromEnvironment(url, env);
}

/** The proxy's URL without its credentials, for logs. */
export function proxyForLog(proxy: ProxyChoice): string {
  return `${proxy.url.protocol}//${proxy.url.host}`;
}

/** What every agent to the API server is built with: keep-alive, the most recently used connection first. */
export interface PoolOptions {
  keepAlive: true;
  scheduling: "lifo";
}

/**
 * An http.Agent that reaches the API server through `proxy`: a CONNECT tunnel for an https server (the TLS
 * to the server is the request's own options, so the server's CA, client certificate and server name apply
 * to the server inside the tunnel), absolute-URL requests for an http one, or SOCKS5 (names resolved by the
 * proxy, as Go's SOCKS5 dialer does). `proxyCa` verifies an https proxy's own certificate.
 */
export async function proxyAgent(
  proxy: ProxyChoice,
  secureServer: boolean,
  pool: PoolOptions,
  proxyCa: () => string[],
): Promise<HttpAgent> {
  if (!["http:", "https:", "socks5:"].includes(proxy.url.protocol)) {
    throw new Error(`${proxy.from}: unsupported proxy scheme "${proxy.url.protocol.slice(0, -1)}"`);
  }
  if (proxy.url.protocol === "socks5:") {
    const { SocksProxyAgent } = await import("socks-proxy-agent");
    const url = new URL(proxy.url.href.replace(/^socks5:/, "socks5h:"));
    return new SocksProxyAgent(url, pool);
  }
  const tlsToProxy = proxy.url.protocol === "https:" ? { ca: proxyCa() } : {};
  if (secureServer) {
    const { HttpsProxyAgent } = await import("https-proxy-agent");
    // Its options are the connection to the proxy's only: it takes the target's TLS from each request.
    return new HttpsProxyAgent(proxy.url, { ...pool, ...tlsToProxy });
  }
  const { HttpProxyAgent } = await import("http-proxy-agent");
  return new HttpProxyAgent(proxy.url, { ...pool, ...tlsToProxy });
}

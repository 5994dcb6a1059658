/**
 * Where a Prometheus may be. A CanaryApp's author chooses `spec.prometheusURL`, but the request is made by
 * the controller, from inside the cluster: without a policy any tenant could make the controller query
 * (and report on) any address it can reach. The policy is checked before a connection is opened, and again
 * on every redirect.
 *
 * A policy is a list of entries, each one of:
 * - `*`: any http(s) URL;
 * - a URL prefix with a scheme, `https://prometheus.example.com/team-a`: same scheme, host and port, and a
 *   path equal to the prefix's or below it;
 * - a host, `prometheus.monitoring`, `10.0.0.7:9090`, or a host suffix, `*.svc` (any name ending in `.svc`),
 *   with an optional `:port`: any http(s) URL on that host (and port).
 */

/** The entries used when the controller is given none: in-cluster Services. */
export const DEFAULT_URL_POLICY = ["*.svc", "*.svc.cluster.local"] as const;

type Rule =
  | { kind: "any" }
  | { kind: "prefix"; origin: string; path: string }
  | { kind: "host"; host: string; suffix: boolean; port: string | undefined };

/** A parsed policy; `entries` is what it was made from, for messages. */
export interface UrlPolicy {
  readonly entries: readonly string[];
  readonly rules: readonly Rule[];
}

export class UrlPolicyError extends Error {
  override readonly name = "UrlPolicyError";
}

function parseEntry(entry: string): Rule {
  if (entry === "*") return { kind: "any" };
  if (entry.includes("://")) {
    let url: URL;
    try {
      url = new URL(entry);
    } catch {
      throw new UrlPolicyError(`"${entry}" is not a URL`);
    }
    if (url.protocol !== "http:" && url.protocol !== "https:") {
      throw new UrlPolicyError(`"${entry}" is not an http(s) URL`);
    }
    if (url.username !== "" || url.password !== "" || url.search !== "" || url.hash !== "") {
      throw new UrlPolicyError(`"${entry}": a URL prefix has no user, query or fragment`);
    }
    return { kind: "prefix", origin: url.origin, path: url.pathname.replace(/\/+$/, "") };
  }
  const match = /^(\*\.)?([a-z0-9.-]+|\[[0-9a-f:.]+\])(?::(\d{1,5}))?$/i.exec(entry);
  if (!match?.[2]) throw new UrlPolicyError(`"${entry}" is neither *, a URL prefix, a host nor *.suffix`);
  return { kind: "host", host: match[2].toLowerCase(), suffix: match[1] !== undefined, port: match[3] };
}

/** Parses a policy's entries; throws `UrlPolicyError` naming the first entry that is not understood. */
export function parseUrlPolicy(entries: readonly string[]): UrlPolicy {
  const trimmed = entries.map((e) => e.trim()).filter((e) => e !== "");
  if (trimmed.length === 0) throw new UrlPolicyError("the policy is empty: give * to allow every URL");
  return { entries: trimmed, rules: trimmed.map(parseEntry) };
}

/** The port a URL connects to (URL drops the scheme's default port). */
function portOf(url: URL): string {
  if (url.port !== "") return url.port;
  return url.protocol === "https:" ? "443" : "80";
}

function matches(rule: Rule, url: URL): boolean {
  switch (rule.kind) {
    case "any":
      return true;
    case "prefix": {
      if (url.origin !== rule.origin) return false;
      const path = url.pathname;
      return rule.path === "" || path === rule.path || path.startsWith(`${rule.path}/`);
    }
    case "host": {
      const host = url.hostname.toLowerCase().replace(/\.$/, "");
      const hostMatches = rule.suffix ? host.endsWith(`.${rule.host}`) : host === rule.host;
      return hostMatches && (rule.port === undefined || rule.port === portOf(url));
    }
  }
}

/** Whether the policy lets the controller connect to `url` (http and https only). */
export function allowsUrl(policy: UrlPolicy, url: URL | string): boolean {
  let parsed: URL;
  try {
    parsed = typeof url === "string" ? new URL(url) : url;
  } catch {
    return false;
  }
  if (parsed.protocol !== "http:" && parsed.protocol !== "https:") return false;
  return policy.rules.some((rule) => matches(rule, parsed));
}

/**
 * The controller's policy: the given entries (or `DEFAULT_URL_POLICY`), plus the controller's own default
 * Prometheus, which its operator chose and which is therefore always allowed.
 */
export function controllerUrlPolicy(entries: readonly string[] | undefined, defaultPrometheusURL?: string): UrlPolicy {
  const own = defaultPrometheusURL === undefined ? [] : [ownPrefix(defaultPrometheusURL)];
  return parseUrlPolicy([...(entries ?? DEFAULT_URL_POLICY), ...own]);
}

function ownPrefix(endpoint: string): string {
  if (!URL.canParse(endpoint)) throw new UrlPolicyError(`the default Prometheus "${endpoint}" is not a URL`);
  const url = new URL(endpoint);
  return `${url.origin}${url.pathname}`;
}

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
 *
 * A host suffix lets an app name hosts the operator never saw. Where such a host is a Service's name
 * (`<name>.<namespace>.svc`), whoever writes Services in that namespace decides where it leads, so
 * `judgeUrl` tells the caller to check the Service (services.ts); an exact host or a prefix is the
 * operator's own choice and is taken as written. The same entries make the webhook policy
 * (webhook-destinations.ts).
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

/** A Service, as named by the host of a URL: `<name>.<namespace>.svc` with or without the cluster domain. */
export interface ServiceName {
  name: string;
  namespace: string;
}

/** A DNS label (RFC 1123), the shape of every Service and namespace name. */
const DNS_LABEL = /^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$/;

/**
 * The Service a host names: `<name>.<namespace>.svc`, optionally followed by the cluster domain
 * (`.cluster.local`); undefined for any other host (`name.namespace`, a pod's name under a headless Service,
 * an IP address).
 */
export function serviceNamed(host: string): ServiceName | undefined {
  const labels = host.toLowerCase().replace(/\.$/, "").split(".");
  const [name, namespace, svc] = labels;
  if (svc !== "svc" || name === undefined || namespace === undefined) return undefined;
  if (!DNS_LABEL.test(name) || !DNS_LABEL.test(namespace)) return undefined;
  return labels.slice(3).every((label) => DNS_LABEL.test(label)) ? { name, namespace } : undefined;
}

/**
 * How a policy takes a URL:
 * - `outside`: no entry allows it;
 * - `allowed`: an entry the operator wrote for it allows it (`*`, a URL prefix, an exact host), or only
 *   host suffixes that are not about Services do (`*.example.com`);
 * - `service`: only host suffixes allow it, and its host names a Service: the name reaches whatever the
 *   Service makes it reach, which its namespace's authors decide (an ExternalName Service resolves to any
 *   host), so the Service must be checked before anything is sent;
 * - `notService`: only a suffix about Services (`*.svc`, `*.team-a.svc.cluster.local`: one with a `svc`
 *   label) allows it, and its host is not a Service's name (a pod's name under a headless Service).
 */
export type UrlJudgement =
  | { kind: "outside" }
  | { kind: "allowed" }
  | { kind: "service"; service: ServiceName }
  | { kind: "notService"; entry: string };

/** Judges `url` by the policy (see UrlJudgement); anything but http(s) is outside. */
export function judgeUrl(policy: UrlPolicy, url: URL | string): UrlJudgement {
  let parsed: URL;
  try {
    parsed = typeof url === "string" ? new URL(url) : url;
  } catch {
    return { kind: "outside" };
  }
  if (parsed.protocol !== "http:" && parsed.protocol !== "https:") return { kind: "outside" };
  const matching = policy.rules.map((rule, i) => ({ rule, entry: policy.entries[i] ?? "" }));
  const allowing = matching.filter(({ rule }) => matches(rule, parsed));
  if (allowing.length === 0) return { kind: "outside" };
  if (allowing.some(({ rule }) => rule.kind !== "host" || !rule.suffix)) return { kind: "allowed" };
  const service = serviceNamed(parsed.hostname);
  if (service !== undefined) return { kind: "service", service };
  const aboutServices = allowing.find(({ rule }) => rule.kind === "host" && rule.host.split(".").includes("svc"));
  return aboutServices === undefined ? { kind: "allowed" } : { kind: "notService", entry: aboutServices.entry };
}

/**
 * Whether the policy has an entry for `url` (http and https only). A `service` judgement counts as allowed
 * here: `judgeUrl` tells a caller that must check the Service.
 */
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

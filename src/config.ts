import { hostname } from "node:os";
import { Command, CommanderError, Option as FlagOption } from "commander";
import { controllerUrlPolicy, DEFAULT_URL_POLICY, UrlPolicyError } from "./analysis/providers/url-policy.js";
import { parseRoutePolicy, RoutePolicyError } from "./router/host-policy.js";

/**
 * The controller's configuration, from flags (`--name=value` or `--name value`, parsed by commander as the
 * kubectl plugin's are) over environment variables.
 */

/** CanaryApps reconciled at once when --workers is not given (ADR 0018). */
export const DEFAULT_WORKERS = 20;

/** The leader Lease, and the shard group's name, unless --lease-name says otherwise. */
export const DEFAULT_LEASE_NAME = "canaryapp-controller";

export interface Config {
  /** Path of a kubeconfig; absent means $KUBECONFIG, ~/.kube/config or in-cluster. */
  kubeconfig: string | undefined;
  /** Namespaces to watch; empty means all. */
  namespaces: string[];
  workers: number;
  /** host:port of /healthz, /readyz and /metrics. */
  httpAddress: { host: string; port: number };
  leaderElection: { enabled: boolean; namespace: string; name: string; identity: string };
  /**
   * Shares the apps are divided into among active replicas (ADR 0016). 1: one leader does all the work (leader
   * election). More: every replica works, each on the shares it holds a Lease for.
   */
  shards: number;
  /** Prometheus used by apps that set no prometheusURL. */
  defaultPrometheusURL: string | undefined;
  /** Where an app's Prometheus may be (analysis/providers/url-policy.ts); undefined means the default policy. */
  prometheusURLPolicy: string[] | undefined;
  /** A generic JSON receiver told about every app's tests (besides each app's own notifications). */
  notificationURL: string | undefined;
  /**
   * Where apps' webhooks and notifications may be POSTed (analysis/providers/url-policy.ts entries); undefined
   * means the default: Services of the app's own namespace only.
   */
  webhookURLPolicy: string[] | undefined;
  /** Whether a credential may be sent over plain http (default false: https only). */
  allowPlainHttpCredentials: boolean;
  /** Hosts an app's route may answer for besides its own namespace's Services (router/host-policy.ts). */
  allowedHosts: string[];
  /** Gateways (`namespace/name` or `namespace/*`) an app's route may attach to besides the mesh. */
  allowedGateways: string[];
  logLevel: string;
}

export class ConfigError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "ConfigError";
  }
}

interface Option {
  flag: string;
  env: string;
  help: string;
}

export const OPTIONS = {
  kubeconfig: {
    flag: "kubeconfig",
    env: "KUBECONFIG",
    help: "kubeconfig path (default: in-cluster or ~/.kube/config)",
  },
  namespaces: {
    flag: "namespaces",
    env: "WATCH_NAMESPACES",
    help: "comma-separated namespaces to watch (default: all)",
  },
  workers: { flag: "workers", env: "WORKERS", help: "CanaryApps reconciled in parallel (default 20)" },
  httpAddress: {
    flag: "http-address",
    env: "HTTP_ADDRESS",
    help: "address of /healthz /readyz /metrics (default :8080)",
  },
  leaderElect: { flag: "leader-elect", env: "LEADER_ELECT", help: "elect a leader on a Lease (default true)" },
  leaseNamespace: {
    flag: "lease-namespace",
    env: "LEASE_NAMESPACE",
    help: "namespace of the Lease (default: POD_NAMESPACE or default)",
  },
  leaseName: { flag: "lease-name", env: "LEASE_NAME", help: "name of the Lease (default canaryapp-controller)" },
  shards: {
    flag: "shards",
    env: "SHARDS",
    help: "shares of the apps, each on its own Lease, spread over all replicas; 1 = one leader does all (default 1)",
  },
  identity: { flag: "identity", env: "POD_NAME", help: "this replica's name in the Lease (default: hostname + pid)" },
  prometheusURL: {
    flag: "prometheus-url",
    env: "PROMETHEUS_URL",
    help: "Prometheus for apps without spec.prometheusURL",
  },
  prometheusURLPolicy: {
    flag: "prometheus-url-policy",
    env: "PROMETHEUS_URL_POLICY",
    help: `where apps' Prometheus may be: comma-separated URL prefixes, hosts, *.suffix, or * for anywhere (default ${DEFAULT_URL_POLICY.join(",")}; the --prometheus-url is always allowed)`,
  },
  notificationURL: {
    flag: "notification-url",
    env: "NOTIFICATION_URL",
    help: "a generic JSON webhook told when any app's test starts, is promoted or rolled back (default: none)",
  },
  webhookURLPolicy: {
    flag: "webhook-url-policy",
    env: "WEBHOOK_URL_POLICY",
    help: "where apps' webhooks and notifications may be POSTed: URL prefixes, hosts, *.suffix, or * (default: Services of the app's own namespace)",
  },
  allowPlainHttpCredentials: {
    flag: "allow-plain-http-credentials",
    env: "ALLOW_PLAIN_HTTP_CREDENTIALS",
    help: "send credentials over plain http too (default false: https only)",
  },
  allowedHosts: {
    flag: "allowed-hosts",
    env: "ALLOWED_HOSTS",
    help: "hosts an app's route may answer for besides its namespace's Services: names, *.suffix, or * (default: none)",
  },
  allowedGateways: {
    flag: "allowed-gateways",
    env: "ALLOWED_GATEWAYS",
    help: "gateways an app's route may attach to besides mesh: namespace/name or namespace/* (default: none)",
  },
  logLevel: { flag: "log-level", env: "LOG_LEVEL", help: "trace, debug, info, warn, error (default info)" },
} as const satisfies Record<string, Option>;

const LOG_LEVELS = ["trace", "debug", "info", "warn", "error", "fatal", "silent"];

/** Parses flags and environment; throws ConfigError naming the option on anything invalid. */
export function loadConfig(argv: string[], env: Record<string, string | undefined>): Config {
  const flags = parseFlags(argv);
  const read = (option: Option): string | undefined => flags.get(option.flag) ?? nonEmpty(env[option.env]);

  // A reconcile spends nearly all its time waiting for the API server: 20 in flight keep it as busy as a
  // client with 20 requests in flight (the bench's floor), and no more than the server's fair share of one client.
  const workers = integer(read(OPTIONS.workers) ?? String(DEFAULT_WORKERS), OPTIONS.workers, 1, 64);
  const prometheusURL = read(OPTIONS.prometheusURL);
  if (prometheusURL !== undefined && !/^https?:\/\/[^\s/]+/.test(prometheusURL)) {
    throw new ConfigError(`--${OPTIONS.prometheusURL.flag}: "${prometheusURL}" is not an http(s) URL`);
  }
  const policyText = read(OPTIONS.prometheusURLPolicy);
  const prometheusURLPolicy = policyText === undefined ? undefined : policyText.split(",").map((e) => e.trim());
  try {
    controllerUrlPolicy(prometheusURLPolicy, prometheusURL);
  } catch (err) {
    if (!(err instanceof UrlPolicyError)) throw err;
    throw new ConfigError(`--${OPTIONS.prometheusURLPolicy.flag}: ${err.message}`);
  }
  const notificationURL = read(OPTIONS.notificationURL);
  if (notificationURL !== undefined && !/^https?:\/\/[^\s/]+/.test(notificationURL)) {
    throw new ConfigError(`--${OPTIONS.notificationURL.flag}: "${notificationURL}" is not an http(s) URL`);
  }
  const shards = integer(read(OPTIONS.shards) ?? "1", OPTIONS.shards, 1, 1024);
  const leaderElect = boolean(read(OPTIONS.leaderElect) ?? "true", OPTIONS.leaderElect);
  if (shards > 1 && !leaderElect) {
    throw new ConfigError(`--${OPTIONS.shards.flag}: sharding holds its shares on Leases; it needs --leader-elect`);
  }
  const logLevel = read(OPTIONS.logLevel) ?? "info";
  if (!LOG_LEVELS.includes(logLevel)) {
    throw new ConfigError(`--${OPTIONS.logLevel.flag}: "${logLevel}" is not one of ${LOG_LEVELS.join(", ")}`);
  }
  return {
    kubeconfig: read(OPTIONS.kubeconfig),
    namespaces: (read(OPTIONS.namespaces) ?? "")
      .split(",")
      .map((n) => n.trim())
      .filter((n) => n.length > 0),
    workers,
    httpAddress: address(read(OPTIONS.httpAddress) ?? ":8080"),
    leaderElection: {
      enabled: leaderElect,
      namespace: read(OPTIONS.leaseNamespace) ?? nonEmpty(env.POD_NAMESPACE) ?? "default",
      name: read(OPTIONS.leaseName) ?? DEFAULT_LEASE_NAME,
      identity: read(OPTIONS.identity) ?? `${hostname()}-${process.pid}`,
    },
    shards,
    defaultPrometheusURL: prometheusURL,
    prometheusURLPolicy,
    notificationURL,
    webhookURLPolicy: list(read(OPTIONS.webhookURLPolicy)),
    allowPlainHttpCredentials: boolean(
      read(OPTIONS.allowPlainHttpCredentials) ?? "false",
      OPTIONS.allowPlainHttpCredentials,
    ),
    ...routeAllowances(list(read(OPTIONS.allowedHosts)) ?? [], list(read(OPTIONS.allowedGateways)) ?? []),
    logLevel,
  };
}

/** The usage text printed by --help. */
export function usage(): string {
  return flagParser().helpInformation();
}

/** Whether a flag is a switch: given bare it means true (`--leader-elect`), or takes true/false. */
const SWITCHES = new Set<string>([OPTIONS.leaderElect.flag, OPTIONS.allowPlainHttpCredentials.flag]);

/** The flags as commander reads them, each with its environment variable named in the help. */
function flagParser(): Command {
  const program = new Command("canaryapp")
    .usage("[flags]")
    .helpOption(false)
    .exitOverride()
    .configureOutput({ writeOut: () => undefined, writeErr: () => undefined })
    .configureHelp({ helpWidth: 160 })
    .argument("[unexpected...]");
  for (const option of Object.values(OPTIONS) as Option[]) {
    const value = SWITCHES.has(option.flag) ? "[true|false]" : "<value>";
    program.addOption(new FlagOption(`--${option.flag} ${value}`, `$${option.env}: ${option.help}`));
  }
  return program;
}

/** The flags given, by name; an unknown flag, a flag without its value or a positional argument is refused. */
function parseFlags(argv: string[]): Map<string, string> {
  const program = flagParser();
  try {
    program.parse(argv, { from: "user" });
  } catch (error) {
    if (!(error instanceof CommanderError)) throw error;
    const flag = /'(--[^'= ]+)/.exec(error.message)?.[1] ?? "";
    if (error.code === "commander.unknownOption") throw new ConfigError(`unknown flag ${flag} (see --help)`);
    if (error.code === "commander.optionMissingArgument") throw new ConfigError(`${flag}: a value is needed`);
    throw new ConfigError(error.message.replace(/^error: /, ""));
  }
  const [unexpected] = program.args;
  if (unexpected !== undefined) throw new ConfigError(`unexpected argument "${unexpected}"`);
  const flags = new Map<string, string>();
  for (const option of program.options) {
    // A string, or true for a switch given bare.
    const value = program.getOptionValue(option.attributeName()) as string | true | undefined;
    if (value !== undefined) flags.set(option.long?.slice(2) ?? "", value === true ? "true" : value);
  }
  return flags;
}

/** The route flags, checked: an entry not understood names its flag. */
function routeAllowances(hosts: string[], gateways: string[]): { allowedHosts: string[]; allowedGateways: string[] } {
  try {
    parseRoutePolicy(hosts, []);
  } catch (err) {
    if (err instanceof RoutePolicyError) throw new ConfigError(`--${OPTIONS.allowedHosts.flag}: ${err.message}`);
    throw err;
  }
  try {
    parseRoutePolicy([], gateways);
  } catch (err) {
    if (err instanceof RoutePolicyError) throw new ConfigError(`--${OPTIONS.allowedGateways.flag}: ${err.message}`);
    throw err;
  }
  return { allowedHosts: hosts, allowedGateways: gateways };
}

/** A comma-separated list, its entries trimmed and empty ones dropped; undefined when not given. */
function list(text: string | undefined): string[] | undefined {
  if (text === undefined) return undefined;
  return text
    .split(",")
    .map((e) => e.trim())
    .filter((e) => e !== "");
}

function nonEmpty(value: string | undefined): string | undefined {
  return value === undefined || value === "" ? undefined : value;
}

function integer(text: string, option: Option, min: number, max: number): number {
  const value = Number(text);
  if (!Number.isInteger(value) || value < min || value > max) {
    throw new ConfigError(`--${option.flag}: "${text}" is not a whole number from ${min} to ${max}`);
  }
  return value;
}

function boolean(text: string, option: Option): boolean {
  if (["true", "1", "yes"].includes(text)) return true;
  if (["false", "0", "no"].includes(text)) return false;
  throw new ConfigError(`--${option.flag}: "${text}" is not true or false`);
}

function address(text: string): { host: string; port: number } {
  const colon = text.lastIndexOf(":");
  const host = colon <= 0 ? "0.0.0.0" : text.slice(0, colon);
  const port = Number(colon === -1 ? text : text.slice(colon + 1));
  if (!Number.isInteger(port) || port < 0 || port > 65535) {
    throw new ConfigError(`--${OPTIONS.httpAddress.flag}: "${text}" is not host:port or :port`);
  }
  return { host, port };
}

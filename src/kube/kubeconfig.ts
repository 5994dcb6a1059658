/**
 * Where the controller's API server is and how it proves who it is, read from a kubeconfig or the pod's
 * service account without loading @kubernetes/client-node (ADR 0017).
 *
 * The forms read here are the ones a controller meets: the in-cluster service account, a bearer token, a
 * token file, a client certificate (each as a file or as inline data), an exec plugin (src/kube/exec-plugin.ts),
 * and the cluster's `proxy-url`. Anything else (auth providers, basic auth) is handed to client-node's public
 * `KubeConfig`, imported only then. Either way the proxy is chosen as kubectl chooses it (src/kube/proxy.ts).
 */
import { existsSync, readFileSync } from "node:fs";
import { homedir } from "node:os";
import { delimiter, dirname, isAbsolute, join, resolve } from "node:path";
import { load } from "js-yaml";
import { ExecPlugin, execCluster, parseExecConfig } from "./exec-plugin.js";
import { chooseProxy, type ProxyChoice } from "./proxy.js";

const SERVICE_ACCOUNT_DIR = "/var/run/secrets/kubernetes.io/serviceaccount";
/** How long a token read from a file is used before the file is read again (client-go: one minute). */
export const TOKEN_FILE_REREAD_MS = 60_000;

/** TLS settings for the connections to one API server. */
export interface TlsSettings {
  ca?: Buffer;
  cert?: Buffer;
  key?: Buffer;
  /** False only when the kubeconfig says insecure-skip-tls-verify. */
  rejectUnauthorized: boolean;
  servername?: string;
}

/** One API server and one user: everything a request needs to reach it. */
export interface ApiEndpoint {
  /** The server's base URL, without a trailing slash. */
  server: string;
  /**
   * The TLS settings as of the last {@link authenticate}. When an exec plugin hands out another client
   * certificate, this becomes a new object (never changed in place): a client that sees another object here
   * opens new connections with it.
   */
  readonly tls: TlsSettings;
  /** The proxy requests go through (the cluster's proxy-url, else HTTPS_PROXY/HTTP_PROXY less NO_PROXY), if any. */
  proxy?: ProxyChoice | undefined;
  /** Headers that authenticate a request (a bearer token, read again from its file when it may have rotated). */
  authenticate(): Promise<Record<string, string>>;
  /**
   * Told that the API server refused (401) a request sent with `headers`, the very object {@link authenticate}
   * returned for it: resolves true when there is now another credential to send the request again with (an exec
   * plugin was run again, once for all the requests refused the same credential). Only endpoints whose
   * credential can be renewed have it; it rejects when renewing fails.
   */
  refused?(headers: Record<string, string>): Promise<boolean>;
  /** Which reader produced it: "kubeconfig", "in-cluster" or "client-node" (the fallback). */
  source: "kubeconfig" | "in-cluster" | "client-node";
}

/** Where {@link readKubeConfig} looks; injectable so tests need not touch the real environment. */
export interface KubeConfigSources {
  env?: Record<string, string | undefined>;
  home?: string;
  fileExists?: (path: string) => boolean;
  /** The service account folder of an in-cluster pod. */
  serviceAccountDir?: string;
  /** Milliseconds since the epoch; injectable for the token file's re-read. */
  now?: () => number;
}

/** A kubeconfig whose user (or cluster) needs client-node to authenticate. */
export interface Fallback {
  /** The kubeconfig files, in order, for client-node to load and merge. */
  files: string[];
  /** Why the fallback is needed, e.g. "user.auth-provider". */
  reason: string;
}

type Yaml = Record<string, unknown>;

interface Named {
  name: string;
  value: Yaml;
  /** The folder of the file it came from: relative paths in it are resolved there, as kubectl does. */
  dir: string;
}

interface Merged {
  currentContext: string | undefined;
  clusters: Map<string, Named>;
  users: Map<string, Named>;
  contexts: Map<string, Named>;
}

function isRecord(value: unknown): value is Yaml {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

function str(value: unknown): string | undefined {
  return typeof value === "string" && value !== "" ? value : undefined;
}

function parseFile(file: string): Yaml {
  let doc: unknown;
  try {
    doc = load(readFileSync(file, "utf8"));
  } catch (error) {
    throw new Error(`kubeconfig ${file}: ${error instanceof Error ? error.message : String(error)}`, { cause: error });
  }
  if (doc === undefined || doc === null) return {};
  if (!isRecord(doc)) throw new Error(`kubeconfig ${file}: not a mapping`);
  return doc;
}

/** Merges kubeconfig files as kubectl does: the first file to set a name (or current-context) wins. */
function merge(files: string[]): Merged {
  const merged: Merged = { currentContext: undefined, clusters: new Map(), users: new Map(), contexts: new Map() };
  for (const file of files) {
    const doc = parseFile(file);
    const dir = dirname(resolve(file));
    merged.currentContext ??= str(doc["current-context"]);
    for (const [list, field] of [
      ["clusters", "cluster"],
      ["users", "user"],
      ["contexts", "context"],
    ] as const) {
      const entries = doc[list];
      if (entries === undefined || entries === null) continue;
      if (!Array.isArray(entries)) throw new Error(`kubeconfig ${file}: ${list} is not a list`);
      for (const entry of entries as unknown[]) {
        if (!isRecord(entry)) continue;
        const name = str(entry.name);
        if (name === undefined || merged[list].has(name)) continue;
        merged[list].set(name, { name, value: isRecord(entry[field]) ? entry[field] : {}, dir });
      }
    }
  }
  return merged;
}

/** Inline base64 data, or the file it names (relative to its kubeconfig's folder). */
function material(entry: Named, dataKey: string, fileKey: string): Buffer | undefined {
  const data = str(entry.value[dataKey]);
  if (data !== undefined) return Buffer.from(data, "base64");
  const file = str(entry.value[fileKey]);
  if (file === undefined) return undefined;
  return readFileSync(isAbsolute(file) ? file : join(entry.dir, file));
}

/** A bearer token read from a file, read again once it is older than {@link TOKEN_FILE_REREAD_MS}. */
function tokenFromFile(file: string, now: () => number): () => Promise<Record<string, string>> {
  let token = "";
  let readAt = -Infinity;
  return () => {
    if (now() - readAt >= TOKEN_FILE_REREAD_MS) {
      token = readFileSync(file, "utf8").trim();
      readAt = now();
    }
    const headers: Record<string, string> = token === "" ? {} : { authorization: `Bearer ${token}` };
    return Promise.resolve(headers);
  };
}

/** User fields read here; any other non-empty field sends the kubeconfig to client-node. */
const USER_FIELDS = new Set([
  "exec",
  "token",
  "tokenFile",
  "client-certificate",
  "client-certificate-data",
  "client-key",
  "client-key-data",
]);
const CLUSTER_FIELDS = new Set([
  "server",
  "certificate-authority",
  "certificate-authority-data",
  "insecure-skip-tls-verify",
  "tls-server-name",
  "proxy-url",
  "disable-compression",
  "extensions",
]);

function unsupported(entry: Named, fields: Set<string>, prefix: string): string | undefined {
  const field = Object.keys(entry.value).find(
    (k) => !fields.has(k) && entry.value[k] !== undefined && entry.value[k] !== null,
  );
  return field === undefined ? undefined : `${prefix}.${field}`;
}

type Env = Record<string, string | undefined>;

function fromFiles(files: string[], now: () => number, env: Env): ApiEndpoint | Fallback {
  const merged = merge(files);
  const contextName = merged.currentContext;
  if (contextName === undefined) throw new Error(`kubeconfig ${files.join(delimiter)}: no current-context`);
  const context = merged.contexts.get(contextName);
  if (context === undefined) throw new Error(`kubeconfig: current context "${contextName}" is not defined`);
  const cluster = merged.clusters.get(str(context.value.cluster) ?? "");
  if (cluster === undefined) throw new Error(`kubeconfig: current context "${contextName}" names no cluster`);
  const server = str(cluster.value.server);
  if (server === undefined) throw new Error(`kubeconfig: cluster "${cluster.name}" has no server`);
  const userName = str(context.value.user);
  const user = userName === undefined ? undefined : merged.users.get(userName);
  if (userName !== undefined && user === undefined) {
    throw new Error(`kubeconfig: current context "${contextName}" names user "${userName}", which is not defined`);
  }
  const reason =
    unsupported(cluster, CLUSTER_FIELDS, "cluster") ?? (user ? unsupported(user, USER_FIELDS, "user") : undefined);
  if (reason !== undefined) return { files, reason };

  const cert = user && material(user, "client-certificate-data", "client-certificate");
  const key = user && material(user, "client-key-data", "client-key");
  if ((cert === undefined) !== (key === undefined)) {
    throw new Error(`kubeconfig: user "${userName ?? ""}" has a client certificate or key but not both`);
  }
  const token = user && str(user.value.token);
  const tokenFile = user && str(user.value.tokenFile);
  const staticHeaders: Record<string, string> = token !== undefined ? { authorization: `Bearer ${token}` } : {};
  const ca = material(cluster, "certificate-authority-data", "certificate-authority");
  const servername = str(cluster.value["tls-server-name"]);
  const proxy = chooseProxy(server, str(cluster.value["proxy-url"]), cluster.name, env);
  const exec =
    user?.value.exec !== undefined && user.value.exec !== null
      ? parseExecConfig(user.value.exec, user.dir, `kubeconfig: user "${user.name}"`)
      : undefined;
  const tls: TlsSettings = {
    ...(ca !== undefined ? { ca } : {}),
    ...(cert !== undefined ? { cert } : {}),
    ...(key !== undefined ? { key } : {}),
    rejectUnauthorized: cluster.value["insecure-skip-tls-verify"] !== true,
    ...(servername !== undefined ? { servername } : {}),
  };
  // client-go leaves the exec plugin out when the user has a token or a client certificate (its
  // UpdateTransportConfig: "we should assume the intention is to use the provided token").
  if (exec !== undefined && token === undefined && tokenFile === undefined && cert === undefined) {
    const plugin = new ExecPlugin(exec, execCluster(cluster.value, ca), { env, now });
    return execEndpoint(server.replace(/\/+$/, ""), proxy, tls, plugin);
  }
  return {
    server: server.replace(/\/+$/, ""),
    ...(proxy !== undefined ? { proxy } : {}),
    tls,
    // A token wins over a token file, as in client-go.
    authenticate:
      token === undefined && tokenFile !== undefined && user !== undefined
        ? tokenFromFile(isAbsolute(tokenFile) ? tokenFile : join(user.dir, tokenFile), now)
        : () => Promise.resolve(staticHeaders),
    source: "kubeconfig",
  };
}

function inCluster(env: Env, dir: string, now: () => number): ApiEndpoint {
  const host = env.KUBERNETES_SERVICE_HOST ?? "";
  const port = env.KUBERNETES_SERVICE_PORT ?? "443";
  const server = `https://${host.includes(":") ? `[${host}]` : host}:${port}`;
  // client-go's in-cluster config keeps the environment's proxy (NO_PROXY usually names the service network).
  const proxy = chooseProxy(server, undefined, "in-cluster", env);
  return {
    server,
    ...(proxy !== undefined ? { proxy } : {}),
    tls: { ca: readFileSync(join(dir, "ca.crt")), rejectUnauthorized: true },
    authenticate: tokenFromFile(join(dir, "token"), now),
    source: "in-cluster",
  };
}

/**
 * Reads the API endpoint from, in order: `path` (a file, or several joined by the platform's path delimiter
 * as in $KUBECONFIG), $KUBECONFIG, the in-cluster service account, ~/.kube/config.
 *
 * It never falls back to an unauthenticated http://localhost:8080: finding no configuration at all is an
 * error that says where it looked. In-cluster comes before ~/.kube/config so that a pod never picks up a
 * stray file from its image. Returns a {@link Fallback} for kubeconfigs whose user or cluster uses a form
 * read only by client-node.
 */
export function readKubeConfig(path?: string, sources: KubeConfigSources = {}): ApiEndpoint | Fallback {
  const env = sources.env ?? process.env;
  const exists = sources.fileExists ?? existsSync;
  const now = sources.now ?? Date.now;
  const serviceAccount = sources.serviceAccountDir ?? SERVICE_ACCOUNT_DIR;
  const files = (path ?? env.KUBECONFIG ?? "").split(delimiter).filter((f) => f !== "");
  if (files.length > 0) return fromFiles(files, now, env);
  if (env.KUBERNETES_SERVICE_HOST !== undefined && exists(join(serviceAccount, "token"))) {
    return inCluster(env, serviceAccount, now);
  }
  const home = join(sources.home ?? homedir(), ".kube", "config");
  if (!exists(home)) {
    throw new Error(`no kubeconfig: no --kubeconfig, $KUBECONFIG unset, not in a cluster, and ${home} is missing`);
  }
  return fromFiles([home], now, env);
}

/** Whether {@link readKubeConfig} handed the kubeconfig to client-node. */
export function isFallback(read: ApiEndpoint | Fallback): read is Fallback {
  return "reason" in read;
}

/** Whether two optional PEM buffers hold the same bytes. */
function sameBytes(a: Buffer | undefined, b: Buffer | undefined): boolean {
  return a === undefined || b === undefined ? a === b : a.equals(b);
}

/** `base` with the client certificate and key `cert` and `key` (or none). */
function withCredential(base: TlsSettings, cert: Buffer | undefined, key: Buffer | undefined): TlsSettings {
  const { cert: _cert, key: _key, ...rest } = base;
  return { ...rest, ...(cert !== undefined ? { cert } : {}), ...(key !== undefined ? { key } : {}) };
}

/**
 * The endpoint of a user with an exec plugin: each request sends the plugin's current credential, and a client
 * certificate it hands out follows it (`tls` becomes a new object when the certificate or key differs).
 */
function execEndpoint(
  server: string,
  proxy: ProxyChoice | undefined,
  base: TlsSettings,
  plugin: ExecPlugin,
): ApiEndpoint {
  let tls = base;
  return {
    server,
    ...(proxy !== undefined ? { proxy } : {}),
    get tls() {
      return tls;
    },
    async authenticate() {
      const { headers, cert, key } = await plugin.credential();
      if (!sameBytes(cert, tls.cert) || !sameBytes(key, tls.key)) tls = withCredential(tls, cert, key);
      // The plugin's own object, unchanged: `refused` knows the credential by it.
      return headers;
    },
    refused: (headers) => plugin.refused(headers),
    source: "kubeconfig",
  };
}

/**
 * The endpoint of a kubeconfig read by client-node's `KubeConfig` (imported here, and only here): its
 * `applyToHTTPSOptions` runs for every request, so auth providers (and the exec plugin of a kubeconfig handed
 * over for another field) refresh their credentials as client-node does. A client certificate they hand out follows them: when the certificate or
 * key differs from the last one, `tls` becomes a new object with the new pair.
 */
export async function clientNodeEndpoint(fallback: Fallback, env: Env = process.env): Promise<ApiEndpoint> {
  const { KubeConfig } = await import("@kubernetes/client-node");
  const [first, ...rest] = fallback.files;
  const kc = new KubeConfig();
  if (first !== undefined) kc.loadFromFile(first);
  for (const file of rest) {
    const more = new KubeConfig();
    more.loadFromFile(file);
    kc.mergeConfig(more, Boolean(kc.getCurrentContext()));
  }
  const cluster = kc.getCurrentCluster();
  if (cluster === null) throw new Error(`kubeconfig: current context "${kc.getCurrentContext()}" names no cluster`);
  const proxy = chooseProxy(cluster.server, cluster.proxyUrl, cluster.name, env);
  type Options = { headers?: Record<string, unknown>; auth?: string; ca?: unknown; cert?: unknown; key?: unknown };
  const options: Options = {};
  await kc.applyToHTTPSOptions(options);
  const buffer = (value: unknown): Buffer | undefined =>
    typeof value === "string" || Buffer.isBuffer(value) ? Buffer.from(value) : undefined;
  const ca = buffer(options.ca);
  let tls = withCredential(
    {
      ...(ca !== undefined ? { ca } : {}),
      rejectUnauthorized: cluster.skipTLSVerify !== true,
      ...(cluster.tlsServerName !== undefined ? { servername: cluster.tlsServerName } : {}),
    },
    buffer(options.cert),
    buffer(options.key),
  );
  return {
    server: cluster.server.replace(/\/+$/, ""),
    ...(proxy !== undefined ? { proxy } : {}),
    get tls() {
      return tls;
    },
    async authenticate() {
      const opts: Options = { headers: {} };
      await kc.applyToHTTPSOptions(opts);
      const cert = buffer(opts.cert);
      const key = buffer(opts.key);
      if (!sameBytes(cert, tls.cert) || !sameBytes(key, tls.key)) tls = withCredential(tls, cert, key);
      const headers: Record<string, string> = {};
      for (const [k, v] of Object.entries(opts.headers ?? {})) if (typeof v === "string") headers[k.toLowerCase()] = v;
      if (opts.auth !== undefined) headers.authorization = `Basic ${Buffer.from(opts.auth).toString("base64")}`;
      return headers;
    },
    source: "client-node",
  };
}

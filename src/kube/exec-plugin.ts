/**
 * Credentials from a kubeconfig user's exec plugin (`user.exec`: a program that prints an ExecCredential of
 * client.authentication.k8s.io/v1 or v1beta1), got as client-go's exec authenticator gets them
 * (k8s.io/client-go/plugin/pkg/client/auth/exec/exec.go; the kubeconfig's rules from tools/clientcmd/validation.go):
 *
 * - the credential (a bearer token, a client certificate and key, or both) is kept until its
 *   `status.expirationTimestamp` has passed (for good without one); the next request after it runs the plugin again;
 * - a credential the API server refuses (401) is renewed by running the plugin again: once, however many requests
 *   it was refused to, and only while it is still the current one (client-go's `maybeRefreshCreds`); whoever
 *   needs a credential while the plugin runs waits for that run;
 * - the plugin gets the process's environment, then the kubeconfig's `env`, then `KUBERNETES_EXEC_INFO`: an
 *   ExecCredential of the configured version whose `spec.cluster` is set only with `provideClusterInfo`;
 * - it never gets a terminal: a controller has none, so `spec.interactive` is false, its stdin is closed, and a
 *   plugin that requires one (`interactiveMode: Always`) is an error before it is run;
 * - a plugin that fails is an error that names the command and says what it wrote to stderr.
 *
 * It is ours because client-node's `KubeConfig` keeps an exec credential in a cache that its public API cannot
 * invalidate, so a refused credential could not be renewed through it (ADR 0017).
 */
import { X509Certificate, createPrivateKey } from "node:crypto";
import { isAbsolute, join } from "node:path";
import { JSON_SCHEMA, load } from "js-yaml";

const GROUP = "client.authentication.k8s.io";
/** The versions of ExecCredential a plugin may speak (client-go's `apiVersions`; v1alpha1 is gone). */
const API_VERSIONS = [`${GROUP}/v1`, `${GROUP}/v1beta1`] as const;
export type ExecApiVersion = (typeof API_VERSIONS)[number];
export type InteractiveMode = "Never" | "IfAvailable" | "Always";
/** The name of the cluster extension whose value a plugin gets as `spec.cluster.config`. */
export const EXEC_CLUSTER_EXTENSION = `${GROUP}/exec`;
/** How much of a failed plugin's stderr its error repeats (the end of it, where the reason usually is). */
const STDERR_IN_ERROR = 2000;

type Env = Record<string, string | undefined>;

/** A user's `exec`, validated and with kubectl's defaults. */
export interface ExecConfig {
  /** As in the kubeconfig; a relative path with a slash is resolved next to the kubeconfig file. */
  command: string;
  args: string[];
  env: { name: string; value: string }[];
  apiVersion: ExecApiVersion;
  interactiveMode: InteractiveMode;
  provideClusterInfo: boolean;
  installHint: string | undefined;
}

/** What `spec.cluster` tells a plugin about the cluster (client-go's clientauthentication Cluster). */
export interface ExecCluster {
  server: string;
  "tls-server-name"?: string;
  "insecure-skip-tls-verify"?: boolean;
  /** Base64, as Go encodes bytes. */
  "certificate-authority-data"?: string;
  "proxy-url"?: string;
  "disable-compression"?: boolean;
  /** The value of the cluster's extension named {@link EXEC_CLUSTER_EXTENSION}. */
  config?: unknown;
}

/** A credential a plugin printed. */
export interface ExecCredential {
  /**
   * The headers to send (the bearer token, if any). One object per run of the plugin: it is how
   * {@link ExecPlugin.refused} knows which credential was refused.
   */
  readonly headers: Readonly<Record<string, string>>;
  readonly cert: Buffer | undefined;
  readonly key: Buffer | undefined;
  /** Milliseconds since the epoch after which it is not used; undefined: it is used until refused. */
  readonly expiresAt: number | undefined;
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/**
 * Reads a user's `exec` as kubectl does: the checks of clientcmd's validation (their messages, after `where`),
 * interactiveMode defaulting to IfAvailable for v1beta1 only, and a relative command that names a folder resolved
 * in `dir` (the kubeconfig's folder; a bare name is looked up in PATH).
 */
export function parseExecConfig(exec: unknown, dir: string, where: string): ExecConfig {
  const fail = (message: string): never => {
    throw new Error(`${where}: ${message}`);
  };
  if (!isRecord(exec)) return fail("exec is not a mapping");
  const text = (key: string): string => {
    const value = exec[key];
    if (value === undefined || value === null) return "";
    return typeof value === "string" ? value : fail(`exec: ${key} is not a string`);
  };
  const command = text("command");
  if (command === "") fail("command must be specified to use exec authentication plugin");
  const apiVersion = text("apiVersion");
  if (apiVersion === "") fail("apiVersion must be specified to use exec authentication plugin");
  if (!(API_VERSIONS as readonly string[]).includes(apiVersion))
    fail(`exec plugin: invalid apiVersion "${apiVersion}"`);
  const args = exec.args ?? [];
  if (!Array.isArray(args) || !args.every((a) => typeof a === "string")) fail("exec: args is not a list of strings");
  const env = (exec.env ?? []) as unknown;
  if (!Array.isArray(env)) return fail("exec: env is not a list");
  const vars = env.map((entry: unknown) => {
    const name = isRecord(entry) && typeof entry.name === "string" ? entry.name : "";
    if (name === "") fail("env variable name must be specified to use exec authentication plugin");
    const value = isRecord(entry) ? entry.value : undefined;
    return { name, value: typeof value === "string" ? value : "" };
  });
  // clientcmd/api/v1 SetDefaults_ExecConfig: only v1beta1 (and the removed v1alpha1) default the mode.
  const mode = text("interactiveMode") || (apiVersion === `${GROUP}/v1beta1` ? "IfAvailable" : "");
  if (mode === "") fail("interactiveMode must be specified to use exec authentication plugin");
  if (mode !== "Never" && mode !== "IfAvailable" && mode !== "Always") fail(`invalid interactiveMode: "${mode}"`);
  const hint = text("installHint");
  return {
    command: command.includes("/") && !isAbsolute(command) ? join(dir, command) : command,
    args: args as string[],
    env: vars,
    apiVersion: apiVersion as ExecApiVersion,
    interactiveMode: mode as InteractiveMode,
    provideClusterInfo: exec.provideClusterInfo === true,
    installHint: hint === "" ? undefined : hint,
  };
}

/** The cluster as a plugin with `provideClusterInfo` is told it (client-go's rest.ConfigToExecCluster). */
export function execCluster(cluster: Record<string, unknown>, ca: Buffer | undefined): ExecCluster {
  const str = (key: string): string | undefined => {
    const value = cluster[key];
    return typeof value === "string" && value !== "" ? value : undefined;
  };
  const extensions = Array.isArray(cluster.extensions) ? (cluster.extensions as unknown[]) : [];
  const config = extensions.find((e) => isRecord(e) && e.name === EXEC_CLUSTER_EXTENSION);
  const serverName = str("tls-server-name");
  const proxyUrl = str("proxy-url");
  return {
    server: str("server") ?? "",
    ...(serverName !== undefined && { "tls-server-name": serverName }),
    ...(cluster["insecure-skip-tls-verify"] === true && { "insecure-skip-tls-verify": true }),
    ...(ca !== undefined && ca.length > 0 && { "certificate-authority-data": ca.toString("base64") }),
    ...(proxyUrl !== undefined && { "proxy-url": proxyUrl }),
    ...(cluster["disable-compression"] === true && { "disable-compression": true }),
    ...(isRecord(config) && config.extension !== undefined && { config: config.extension }),
  };
}

/** Options of {@link ExecPlugin}. */
export interface ExecPluginOptions {
  /** The environment the plugin inherits (default: the process's). */
  env?: Env;
  /** Milliseconds since the epoch, for the credential's expiry (default Date.now). */
  now?: () => number;
}

/** A user's exec plugin and the credential it last printed. */
export class ExecPlugin {
  readonly #config: ExecConfig;
  readonly #cluster: ExecCluster | undefined;
  readonly #env: Env;
  readonly #now: () => number;
  #current: ExecCredential | undefined;
  /** The run under way, which every caller that needs a credential meanwhile waits for. */
  #running: Promise<ExecCredential> | undefined;

  /** `cluster` is what `spec.cluster` says with provideClusterInfo; without it, it is not sent. */
  constructor(config: ExecConfig, cluster: ExecCluster, options: ExecPluginOptions = {}) {
    this.#config = config;
    this.#cluster = config.provideClusterInfo ? cluster : undefined;
    this.#env = options.env ?? process.env;
    this.#now = options.now ?? Date.now;
  }

  /** The credential to send: the plugin's next while it runs, else the current one unless it has expired. */
  credential(): Promise<ExecCredential> {
    // client-go holds its lock while the plugin runs: nobody sends the credential being replaced.
    if (this.#running !== undefined) return this.#running;
    const current = this.#current;
    // client-go's credsExpired: used up to and including its expirationTimestamp.
    if (current !== undefined && !(current.expiresAt !== undefined && this.#now() > current.expiresAt)) {
      return Promise.resolve(current);
    }
    return this.#run();
  }

  /**
   * The API server refused (401) the credential whose headers are `refused`: runs the plugin again unless a newer
   * credential has replaced it already (or is being fetched), and resolves whether there is now another credential
   * to send the request again with. Rejects when the plugin fails.
   */
  async refused(refused: Readonly<Record<string, string>>): Promise<boolean> {
    const stale = this.#current;
    if (this.#running !== undefined) await this.#running;
    else if (stale?.headers === refused) await this.#run();
    const current = this.#current;
    if (current === undefined || current.headers === refused) return false;
    // The plugin may print the very credential that was refused: sending it again cannot help.
    return stale?.headers !== refused || !sameCredential(stale, current);
  }

  #run(): Promise<ExecCredential> {
    this.#running ??= this.#exec().then(
      (credential) => {
        this.#current = credential;
        this.#running = undefined;
        return credential;
      },
      (error: unknown) => {
        this.#running = undefined;
        throw error;
      },
    );
    return this.#running;
  }

  async #exec(): Promise<ExecCredential> {
    const { command, args, env, apiVersion, interactiveMode, installHint } = this.#config;
    const fail = (message: string): never => {
      throw new Error(`exec plugin ${command}: ${message}`);
    };
    // client-go's isInteractive with no terminal on stdin: "Always" cannot be met, the others run without it.
    if (interactiveMode === "Always") fail("cannot support interactive mode: standard input is unavailable");
    const spec = { ...(this.#cluster !== undefined && { cluster: this.#cluster }), interactive: false };
    const info = JSON.stringify({ kind: "ExecCredential", apiVersion, spec });
    const childEnv: Env = { ...this.#env };
    for (const { name, value } of env) childEnv[name] = value;
    childEnv.KUBERNETES_EXEC_INFO = info;

    const { stdout, stderr, code, signal, spawnError } = await run(command, args, childEnv);
    if (spawnError !== undefined) {
      if (spawnError.code === "ENOENT")
        fail(`executable not found${installHint !== undefined ? `\n\n${installHint}` : ""}`);
      fail(spawnError.message);
    }
    const said = stderr.trim().slice(-STDERR_IN_ERROR);
    if (code !== 0) {
      const how = signal !== null ? `was ended by ${signal}` : `failed with exit code ${code ?? "unknown"}`;
      fail(`executable ${how}${said !== "" ? `: ${said}` : ""}`);
    }
    // client-go lets the plugin's stderr through to its own.
    if (stderr !== "") process.stderr.write(stderr);
    return this.#decode(stdout, fail);
  }

  #decode(stdout: string, fail: (message: string) => never): ExecCredential {
    let doc: unknown;
    try {
      // YAML's JSON schema: JSON as JSON, YAML with its timestamps left as strings (client-go reads either).
      doc = load(stdout, { schema: JSON_SCHEMA });
    } catch (error) {
      fail(`decoding stdout: ${error instanceof Error ? error.message.split("\n")[0] : String(error)}`);
    }
    if (!isRecord(doc)) return fail("decoding stdout: not an object");
    if (doc.kind !== "ExecCredential") fail(`decoding stdout: kind is ${JSON.stringify(doc.kind)}, not ExecCredential`);
    if (doc.apiVersion !== this.#config.apiVersion) {
      fail(
        `configured to use API version ${this.#config.apiVersion}, plugin returned version ${String(doc.apiVersion)}`,
      );
    }
    const status = doc.status;
    if (!isRecord(status)) return fail("didn't return a status field");
    const field = (key: string): string => (typeof status[key] === "string" ? status[key] : "");
    const token = field("token");
    const certPem = field("clientCertificateData");
    const keyPem = field("clientKeyData");
    if (token === "" && certPem === "" && keyPem === "") fail("didn't return a token or cert/key pair");
    if ((certPem === "") !== (keyPem === "")) fail("returned only certificate or key, not both");
    let cert: Buffer | undefined;
    let key: Buffer | undefined;
    if (certPem !== "") {
      cert = Buffer.from(certPem);
      key = Buffer.from(keyPem);
      try {
        if (!new X509Certificate(cert).checkPrivateKey(createPrivateKey(key))) throw new Error("does not match");
      } catch (error) {
        fail(`failed parsing client key/certificate: ${error instanceof Error ? error.message : String(error)}`);
      }
    }
    let expiresAt: number | undefined;
    const expiration = status.expirationTimestamp;
    if (expiration !== undefined && expiration !== null) {
      expiresAt = typeof expiration === "string" ? Date.parse(expiration) : NaN;
      if (Number.isNaN(expiresAt))
        fail(`decoding stdout: expirationTimestamp ${JSON.stringify(expiration)} is not a time`);
    }
    const headers: Record<string, string> = token === "" ? {} : { authorization: `Bearer ${token}` };
    return { headers: Object.freeze(headers), cert, key, expiresAt };
  }
}

function sameCredential(a: ExecCredential, b: ExecCredential): boolean {
  const same = (x: Buffer | undefined, y: Buffer | undefined) =>
    x === undefined || y === undefined ? x === y : x.equals(y);
  return a.headers.authorization === b.headers.authorization && same(a.cert, b.cert) && same(a.key, b.key);
}

interface Ran {
  stdout: string;
  stderr: string;
  code: number | null;
  signal: NodeJS.Signals | null;
  spawnError: NodeJS.ErrnoException | undefined;
}

/** Runs a command to its end, stdin closed, its output collected. */
function run(command: string, args: string[], env: Env): Promise<Ran> {
  // Taken when a plugin is first run: a controller without one never loads node:child_process.
  const { spawn } = process.getBuiltinModule("node:child_process");
  return new Promise((resolve) => {
    const stdout: Buffer[] = [];
    const stderr: Buffer[] = [];
    let spawnError: NodeJS.ErrnoException | undefined;
    const child = spawn(command, args, { env, stdio: ["ignore", "pipe", "pipe"] });
    child.stdout.on("data", (chunk: Buffer) => stdout.push(chunk));
    child.stderr.on("data", (chunk: Buffer) => stderr.push(chunk));
    child.on("error", (error: NodeJS.ErrnoException) => (spawnError ??= error));
    child.on("close", (code, signal) =>
      resolve({
        stdout: Buffer.concat(stdout).toString("utf8"),
        stderr: Buffer.concat(stderr).toString("utf8"),
        code,
        signal,
        spawnError,
      }),
    );
  });
}

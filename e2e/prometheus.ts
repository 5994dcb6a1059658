/**
 * A throw-away Prometheus for tests and the demo: the distribution's binary on a free loopback port, with a
 * generated configuration that scrapes the given targets, its data in a temporary folder.
 */
import { existsSync, rmSync } from "node:fs";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { track, untrack, type Stoppable } from "./cluster/cleanup.js";
import { ManagedProcess } from "./cluster/managed-process.js";
import { freePorts } from "./cluster/ports.js";
import { PrerequisiteError } from "./cluster/toolchain.js";
import { waitFor } from "./cluster/wait.js";

/** Where Debian's `prometheus` package (installed by `make deps`) puts the server. */
export const DEFAULT_PROMETHEUS_BINARY = "/usr/bin/prometheus";

export interface PrometheusOptions {
  /** `host:port` of every endpoint to scrape at `/metrics`. */
  targets: readonly string[];
  /** Also the scrape timeout and the rule evaluation interval. Default 1. */
  scrapeIntervalSeconds?: number;
  /** A folder under which the temporary work folder is made (default: the system's temp folder). */
  workDir?: string;
  /** Budget for /-/ready (default 30 s). */
  timeoutMs?: number;
  /** The server binary (default: $PROMETHEUS_BINARY, else /usr/bin/prometheus). */
  binary?: string;
  /** Stop on SIGINT/SIGTERM and exit (default true); a caller that handles signals itself passes false. */
  handleSignals?: boolean;
}

/** A running Prometheus. */
export interface RunningPrometheus {
  /** `http://127.0.0.1:<port>` */
  readonly url: string;
  /** Its work folder: configuration, TSDB and log. */
  readonly workDir: string;
  /** Replaces the scrape targets (rewrites the configuration and reloads it through /-/reload). */
  setTargets(targets: readonly string[]): Promise<void>;
  /** Stops the server and removes its work folder. Idempotent. */
  stop(): Promise<void>;
}

const STOP_GRACE_MS = 5_000;
export const SCRAPE_JOB = "canaryapp-e2e";

/** The configuration file for `targets`; every target is scraped at /metrics over plain HTTP. */
export function prometheusConfig(targets: readonly string[], scrapeIntervalSeconds: number): string {
  const interval = `${scrapeIntervalSeconds}s`;
  // JSON is YAML, and JSON.stringify quotes every target safely.
  return JSON.stringify(
    {
      global: { scrape_interval: interval, scrape_timeout: interval, evaluation_interval: interval },
      scrape_configs: [{ job_name: SCRAPE_JOB, static_configs: [{ targets: [...targets] }] }],
    },
    null,
    2,
  );
}

/**
 * Starts Prometheus and resolves once /-/ready answers. A missing binary is a `PrerequisiteError` naming
 * `make deps`. Until stopped, it is killed and its folder removed when this process exits or is interrupted.
 */
export async function startPrometheus(opts: PrometheusOptions): Promise<RunningPrometheus> {
  const binary = opts.binary ?? process.env.PROMETHEUS_BINARY ?? DEFAULT_PROMETHEUS_BINARY;
  if (!existsSync(binary)) {
    throw new PrerequisiteError(`prometheus not found at ${binary}: run \`make deps\` to install it`);
  }
  const interval = opts.scrapeIntervalSeconds ?? 1;
  const workDir = await mkdtemp(join(opts.workDir ?? tmpdir(), "canaryapp-prometheus-"));
  const [port] = (await freePorts(1)) as [number];
  const configPath = join(workDir, "prometheus.json");
  await writeFile(configPath, prometheusConfig(opts.targets, interval));
  const server = new LocalPrometheus(workDir, `http://127.0.0.1:${port}`, configPath, interval);
  const child = new ManagedProcess("prometheus", binary, server.args(port), join(workDir, "prometheus.log"));
  server.attach(child);
  track(server, opts.handleSignals ?? true);
  try {
    await waitFor("prometheus: /-/ready", async () => ((await fetch(`${server.url}/-/ready`)).ok ? true : undefined), {
      timeoutMs: opts.timeoutMs ?? 30_000,
      abort: () => (child.exitStatus ? child.describeExit() : undefined),
    });
  } catch (err) {
    await server.stop();
    throw err;
  }
  return server;
}

class LocalPrometheus implements RunningPrometheus, Stoppable {
  private child: ManagedProcess | undefined;
  private stopped: Promise<void> | undefined;

  constructor(
    readonly workDir: string,
    readonly url: string,
    private readonly configPath: string,
    private readonly interval: number,
  ) {}

  args(port: number): string[] {
    return [
      `--config.file=${this.configPath}`,
      `--storage.tsdb.path=${join(this.workDir, "data")}`,
      `--web.listen-address=127.0.0.1:${port}`,
      "--web.enable-lifecycle",
      "--storage.tsdb.retention.time=1d",
      "--log.level=warn",
    ];
  }

  attach(child: ManagedProcess): void {
    this.child = child;
  }

  async setTargets(targets: readonly string[]): Promise<void> {
    if (this.stopped) throw new Error(`prometheus ${this.url}: stopped`);
    await writeFile(this.configPath, prometheusConfig(targets, this.interval));
    const response = await fetch(`${this.url}/-/reload`, { method: "POST" });
    if (!response.ok) {
      throw new Error(`prometheus ${this.url}: reload failed: HTTP ${response.status}: ${await response.text()}`);
    }
  }

  stop(): Promise<void> {
    this.stopped ??= (async () => {
      await this.child?.stop(STOP_GRACE_MS);
      await rm(this.workDir, { recursive: true, force: true });
      untrack(this);
    })();
    return this.stopped;
  }

  stopNow(): void {
    this.child?.killNow();
    rmSync(this.workDir, { recursive: true, force: true });
  }
}

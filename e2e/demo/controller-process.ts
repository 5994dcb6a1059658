/**
 * The controller as its own process (`node dist/src/main.js`), as it runs in a cluster: flags and
 * environment in, JSON logs out to a file, SIGTERM for a graceful stop.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { controllerNodeFlags } from "../../src/node-flags.js";
import { closeSync, openSync } from "node:fs";
import { readFile } from "node:fs/promises";
import { fileURLToPath } from "node:url";
import { track, untrack, type Stoppable } from "../cluster/cleanup.js";
import { waitFor } from "../cluster/wait.js";

const MAIN = fileURLToPath(new URL("../../src/main.js", import.meta.url));
const STOP_GRACE_MS = 10_000;

export interface ControllerProcessOptions {
  kubeconfig: string;
  namespace: string;
  prometheusURL: string;
  /** Where stdout and stderr go: a new file (its "started" line gives the port). */
  logPath: string;
  /** Budget for /readyz (default 30 s). */
  timeoutMs?: number;
  /** More flags, e.g. the gateways and hosts the operator allows (`--allowed-gateways=…`). */
  flags?: string[];
}

export interface ControllerProcess {
  readonly pid: number | undefined;
  readonly logPath: string;
  /** `http://127.0.0.1:<port>`: /healthz, /readyz, /metrics. */
  readonly url: string;
  /** The command line, for people. */
  readonly command: string;
  /** Resolves with the exit code (null when killed by a signal). */
  readonly exited: Promise<number | null>;
  /** SIGTERM (in-flight reconciles finish), SIGKILL after a grace period. Idempotent. */
  stop(): Promise<void>;
}

/**
 * Starts the controller watching one namespace without leader election, on a free loopback port, and resolves
 * once /readyz answers 200 (its caches are synced). Until stopped, it is killed when this process exits.
 */
export async function startControllerProcess(opts: ControllerProcessOptions): Promise<ControllerProcess> {
  const args = [
    ...controllerNodeFlags(),
    MAIN,
    `--kubeconfig=${opts.kubeconfig}`,
    `--namespaces=${opts.namespace}`,
    "--leader-elect=false",
    "--http-address=127.0.0.1:0",
    ...(opts.flags ?? []),
  ];
  const fd = openSync(opts.logPath, "w");
  let child: ChildProcess;
  try {
    child = spawn(process.execPath, args, {
      env: { ...process.env, PROMETHEUS_URL: opts.prometheusURL, LOG_LEVEL: "info" },
      stdio: ["ignore", fd, fd],
    });
  } finally {
    closeSync(fd);
  }
  const handle = new ChildController(
    child,
    opts.logPath,
    `PROMETHEUS_URL=${opts.prometheusURL} node ${args.join(" ")}`,
  );
  track(handle, false);
  try {
    const port = await waitFor("controller: listening", () => handle.portFromLog(), {
      timeoutMs: opts.timeoutMs ?? 30_000,
      intervalMs: 100,
      abort: () => handle.exitReason(),
    });
    handle.url = `http://127.0.0.1:${port}`;
    await waitFor(
      "controller: /readyz",
      async () => ((await fetch(`${handle.url}/readyz`)).status === 200 ? true : undefined),
      { timeoutMs: opts.timeoutMs ?? 30_000, intervalMs: 100, abort: () => handle.exitReason() },
    );
  } catch (err) {
    await handle.stop();
    throw new Error(`the controller did not become ready; log: ${opts.logPath}`, { cause: err });
  }
  return handle;
}

class ChildController implements ControllerProcess, Stoppable {
  url = "";
  readonly exited: Promise<number | null>;
  private exit: { code: number | null; signal: NodeJS.Signals | null } | undefined;
  private stopped: Promise<void> | undefined;

  constructor(
    private readonly child: ChildProcess,
    readonly logPath: string,
    readonly command: string,
  ) {
    this.exited = new Promise((resolve) => {
      child.once("error", () => {
        this.exit ??= { code: 127, signal: null };
        resolve(127);
      });
      child.once("exit", (code, signal) => {
        this.exit = { code, signal };
        resolve(code);
      });
    });
  }

  get pid(): number | undefined {
    return this.child.pid;
  }

  exitReason(): string | undefined {
    if (!this.exit) return undefined;
    const how = this.exit.signal ? `was killed by ${this.exit.signal}` : `exited with code ${this.exit.code}`;
    return `the controller ${how}; log: ${this.logPath}`;
  }

  /** The port of the "started" log line (main.ts logs it once the HTTP server listens). */
  async portFromLog(): Promise<number | undefined> {
    const text = await readFile(this.logPath, "utf8").catch(() => "");
    for (const line of text.split("\n")) {
      if (!line.startsWith("{")) continue;
      try {
        const entry = JSON.parse(line) as { msg?: unknown; port?: unknown };
        if (entry.msg === "started" && typeof entry.port === "number") return entry.port;
      } catch {
        // A partly written line: read again on the next round.
      }
    }
    return undefined;
  }

  stop(): Promise<void> {
    this.stopped ??= (async () => {
      if (!this.exit) {
        this.child.kill("SIGTERM");
        const timer = setTimeout(() => this.child.kill("SIGKILL"), STOP_GRACE_MS);
        await this.exited;
        clearTimeout(timer);
      }
      untrack(this);
    })();
    return this.stopped;
  }

  stopNow(): void {
    if (!this.exit) this.child.kill("SIGKILL");
  }
}

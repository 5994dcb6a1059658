/**
 * Throw-away metric servers for the metric sources' integration tests: Debian's InfluxDB 1.x and
 * VictoriaMetrics on free loopback ports, their data in a temporary folder. `make metric-servers` installs
 * the packages when missing (a prerequisite of `make test-integration`).
 */
import { existsSync } from "node:fs";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { ManagedProcess } from "./cluster/managed-process.js";
import { freePorts } from "./cluster/ports.js";
import { PrerequisiteError } from "./cluster/toolchain.js";
import { waitFor } from "./cluster/wait.js";

/** A running server. */
export interface RunningServer {
  /** `http://127.0.0.1:<port>` */
  readonly url: string;
  stop(): Promise<void>;
}

async function start(
  name: string,
  binary: string,
  args: (workDir: string, ports: number[]) => Promise<string[]>,
  ready: string,
): Promise<RunningServer> {
  if (!existsSync(binary)) {
    throw new PrerequisiteError(`${name} not found at ${binary}: run \`make metric-servers\` to install it`);
  }
  const workDir = await mkdtemp(join(tmpdir(), `canaryapp-${name}-`));
  const ports = await freePorts(2);
  const url = `http://127.0.0.1:${ports[0]}`;
  const child = new ManagedProcess(name, binary, await args(workDir, ports), join(workDir, `${name}.log`));
  const stop = async () => {
    await child.stop(5_000);
    await rm(workDir, { recursive: true, force: true });
  };
  try {
    await waitFor(
      `${name}: ${ready}`,
      async () => ((await fetch(`${url}${ready}`).catch(() => undefined))?.ok ? true : undefined),
      {
        timeoutMs: 30_000,
        abort: () => (child.exitStatus ? child.describeExit() : undefined),
      },
    );
  } catch (err) {
    await stop();
    throw err;
  }
  return { url, stop };
}

/** Debian's `influxdb` package (1.x): HTTP on the first port, with authentication on (no user yet). */
export function startInfluxDb(binary = process.env.INFLUXD_BINARY ?? "/usr/bin/influxd"): Promise<RunningServer> {
  return start(
    "influxdb",
    binary,
    async (dir, [http, rpc]) => {
      const config = join(dir, "influxdb.conf");
      await writeFile(
        config,
        [
          "reporting-disabled = true",
          `bind-address = "127.0.0.1:${rpc}"`,
          `[meta]\n  dir = "${dir}/meta"`,
          `[data]\n  dir = "${dir}/data"\n  wal-dir = "${dir}/wal"`,
          `[http]\n  bind-address = "127.0.0.1:${http}"\n  auth-enabled = true\n  log-enabled = false`,
          "[monitor]\n  store-enabled = false",
          "",
        ].join("\n"),
      );
      return ["run", "-config", config];
    },
    "/ping",
  );
}

/** Debian's `victoria-metrics` package (single node): Prometheus' query API on the first port. */
export function startVictoriaMetrics(
  binary = process.env.VICTORIA_METRICS_BINARY ?? "/usr/bin/victoria-metrics",
): Promise<RunningServer> {
  return start(
    "victoria-metrics",
    binary,
    (dir, [http]) =>
      Promise.resolve([
        `-storageDataPath=${dir}/data`,
        `-httpListenAddr=127.0.0.1:${http}`,
        "-retentionPeriod=100y",
        "-search.disableCache",
        // Samples just written are queried at once (the default hides the last 30 s).
        "-search.latencyOffset=0s",
      ]),
    "/health",
  );
}

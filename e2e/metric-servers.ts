/**
 * Throw-away metric servers for the metric sources' integration tests: Debian's InfluxDB 1.x, VictoriaMetrics
 * and graphite-web on free loopback ports, their data in a temporary folder. `make metric-servers` installs the
 * packages when missing (a prerequisite of `make test-integration`).
 */
import { execFileSync } from "node:child_process";
import { existsSync } from "node:fs";
import { mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
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
): Promise<RunningServer & { workDir: string }> {
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
  return { url, stop, workDir };
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

/** Debian's graphite-web (Django's server) and python3-whisper, run by Debian's Python. */
const DEBIAN_PYTHON = "/usr/bin/python3";
const GRAPHITE_SETTINGS = "/usr/lib/python3/dist-packages/graphite/settings.py";

/** A running graphite-web, reading the whisper files that `write` makes. */
export interface RunningGraphite extends RunningServer {
  /** Writes `points` ([epoch seconds, value]) to the metric `name` (dotted), 10-second resolution. */
  write(name: string, points: readonly [number, number][]): void;
}

/**
 * graphite-web's render API over whisper files in a temporary folder (no carbon: the test writes the files
 * with Debian's whisper module). Its settings module replaces Debian's /etc/graphite/local_settings.py.
 */
export async function startGraphite(): Promise<RunningGraphite> {
  if (!existsSync(GRAPHITE_SETTINGS)) {
    throw new PrerequisiteError("graphite-web not found: run `make metric-servers` to install it");
  }
  const server = await start(
    "graphite",
    "/usr/bin/env",
    async (dir, [http]) => {
      const settings = [
        "SECRET_KEY = 'canaryapp-tests'",
        "GRAPHITE_ROOT = '/usr/share/graphite-web'",
        `STORAGE_DIR = '${dir}'`,
        `WHISPER_DIR = '${dir}/whisper'`,
        `LOG_DIR = '${dir}'`,
        `INDEX_FILE = '${dir}/index'`,
        `DATABASES = {'default': {'NAME': '${dir}/graphite.db', 'ENGINE': 'django.db.backends.sqlite3'}}`,
        "TAGDB = ''",
        "DEFAULT_XFILES_FACTOR = 0",
        "",
      ];
      await writeFile(join(dir, "canaryapp_graphite_settings.py"), settings.join("\n"));
      await mkdir(join(dir, "whisper"));
      return [
        "DJANGO_SETTINGS_MODULE=graphite.settings",
        "GRAPHITE_SETTINGS_MODULE=canaryapp_graphite_settings",
        `PYTHONPATH=${dir}`,
        DEBIAN_PYTHON,
        "-m",
        "django",
        "runserver",
        "--noreload",
        `127.0.0.1:${http}`,
      ];
    },
    "/render?target=none&format=json",
  );
  const write = (name: string, points: readonly [number, number][]) => {
    const path = join(server.workDir, "whisper", ...name.split(".")) + ".wsp";
    const script = [
      "import json, os, sys, whisper",
      "path, points = sys.argv[1], json.loads(sys.argv[2])",
      "os.makedirs(os.path.dirname(path), exist_ok=True)",
      "os.path.exists(path) or whisper.create(path, [(10, 8640)])",
      "whisper.update_many(path, [tuple(p) for p in points])",
    ].join("\n");
    execFileSync(DEBIAN_PYTHON, ["-c", script, path, JSON.stringify(points)]);
  };
  return { url: server.url, stop: () => server.stop(), write };
}

import { spawn, type ChildProcess } from "node:child_process";
import { fileURLToPath } from "node:url";
import { controllerNodeFlags } from "../../src/node-flags.js";
import { TEST_URL_POLICY } from "./controller.js";
import { eventually } from "./kube.js";

const MAIN = fileURLToPath(new URL("../../src/main.js", import.meta.url));

/** A controller running as its own process, as it runs in a cluster. */
export interface ControllerProcess {
  identity: string;
  child: ChildProcess;
  /** Every JSON log line it printed. */
  logs: Record<string, unknown>[];
  /** The port of its /healthz, /readyz and /metrics, once it serves them. */
  port(): Promise<number>;
  /** A counter or gauge value summed over all label sets, read from /metrics. */
  metric(name: string): Promise<number>;
  /** Several such values from one read of /metrics, in the order of `names`. */
  metrics(names: readonly string[]): Promise<number[]>;
  /** The first log line with this message, once printed (waits for it without asking the process anything). */
  untilLog(msg: string, timeoutMs?: number): Promise<Record<string, unknown>>;
  exited: Promise<number | null>;
  kill(signal: NodeJS.Signals): Promise<number | null>;
}

export function spawnController(flags: string[], identity: string): ControllerProcess {
  const child = spawn(
    process.execPath,
    [...controllerNodeFlags(), MAIN, `--identity=${identity}`, "--http-address=127.0.0.1:0", TEST_URL_POLICY, ...flags],
    {
      env: { ...process.env, LOG_LEVEL: "info" },
      stdio: ["ignore", "pipe", "pipe"],
    },
  );
  const logs: Record<string, unknown>[] = [];
  let buffered = "";
  child.stdout?.on("data", (chunk: Buffer) => {
    buffered += chunk.toString("utf8");
    const lines = buffered.split("\n");
    buffered = lines.pop() ?? "";
    for (const line of lines) {
      try {
        logs.push(JSON.parse(line) as Record<string, unknown>);
      } catch {
        logs.push({ msg: line });
      }
    }
  });
  child.stderr?.on("data", (chunk: Buffer) => logs.push({ stderr: chunk.toString("utf8") }));
  const exited = new Promise<number | null>((resolve) => child.once("exit", (code) => resolve(code)));
  const port = () =>
    eventually(`${identity} serving HTTP`, () => {
      const line = logs.find((l) => typeof l["port"] === "number" && String(l["msg"]).startsWith("serving"));
      return line ? (line["port"] as number) : undefined;
    });
  const metrics = async (names: readonly string[]) => {
    const lines = (await (await fetch(`http://127.0.0.1:${await port()}/metrics`)).text()).split("\n");
    return names.map((name) =>
      lines
        .filter((l) => l.startsWith(`${name} `) || l.startsWith(`${name}{`))
        .reduce((sum, l) => sum + Number(l.slice(l.lastIndexOf(" ") + 1)), 0),
    );
  };
  return {
    identity,
    child,
    logs,
    port,
    metric: async (name: string) => (await metrics([name]))[0] ?? 0,
    metrics,
    untilLog: (msg, timeoutMs = 120_000) =>
      eventually(`${identity} logging "${msg}"`, () => logs.find((l) => l["msg"] === msg), {
        timeoutMs,
        intervalMs: 20,
      }),
    exited,
    kill: async (signal) => {
      if (child.exitCode === null && child.signalCode === null) child.kill(signal);
      return exited;
    },
  };
}

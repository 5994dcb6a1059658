#!/usr/bin/env node
/**
 * `make demo`: the whole product on this machine, without Docker or a cloud.
 *   node dist/e2e/demo/main.js [--keep] [--interval 5s] [--namespace canaryapp-demo] [--rps 50]
 * Starts a local cluster (kwok nodes), the mesh traffic simulator, Prometheus and the controller, then plays
 * the story (v1 live, v2 promoted step by step, v3 caught and rolled back) with kubectl, showing every change
 * as it happens. Exits 0 when the story ended as it should; everything it started is stopped on the way out,
 * also on Ctrl-C. --keep leaves it all running after the story, for kubectl, until Ctrl-C.
 */
import { dirname } from "node:path";
import { parseArgs } from "node:util";
import { parseDurationSeconds, weightSequence } from "../../src/api/defaults.js";
import { stopAllNow } from "../cluster/cleanup.js";
import { reportFailure, UsageError } from "../cluster/cli-common.js";
import { PrerequisiteError } from "../cluster/toolchain.js";
import { startEnvironment, type Environment } from "./environment.js";
import { shellQuote } from "./kubectl.js";
import { StoryRecorder } from "./recorder.js";
import { readSample, runStory, trafficChecks, type StoryResult } from "./story.js";
import { duration, LiveView, styleFor } from "./view.js";

/**
 * The demo's simulated requests per second: at 10 % of it the secondary serves the sample's
 * `analysis.minRequests` (20) within one 5 s step, so each step is decided at its first analysis.
 */
const DEMO_RPS = 50;

const USAGE = `usage: make demo [ARGS='--keep ...'], or node dist/e2e/demo/main.js [--keep] [--interval 5s] [--namespace canaryapp-demo] [--rps ${DEMO_RPS}]
  --keep        keep everything running after the story (kubectl, Prometheus) until Ctrl-C
  --interval    analysis.interval of the sample (time per step), default 5s
  --namespace   namespace of the sample, default canaryapp-demo
  --rps         simulated requests per second to the app, default ${DEMO_RPS}`;

const out = process.stdout;
const style = styleFor(out);
const print = (line = "") => out.write(`${line}\n`);

const interrupt = new AbortController();
let signals = 0;
function onSignal(signal: NodeJS.Signals): void {
  signals++;
  if (signals > 1) {
    // A second Ctrl-C: no more waiting for an orderly stop.
    print(style.bad(`${signal} again: killing everything now`));
    stopAllNow();
    process.exit(130);
  }
  print();
  print(style.warn(`${signal}: stopping everything (Ctrl-C again to kill at once)`));
  interrupt.abort();
}

interface Flags {
  keep: boolean;
  interval: string;
  namespace: string;
  rps: number;
}

function parseFlags(): Flags | undefined {
  let values;
  try {
    ({ values } = parseArgs({
      options: {
        keep: { type: "boolean", default: false },
        interval: { type: "string", default: "5s" },
        namespace: { type: "string", default: "canaryapp-demo" },
        rps: { type: "string", default: String(DEMO_RPS) },
        help: { type: "boolean", short: "h", default: false },
      },
    }));
  } catch (err) {
    throw new UsageError(`${err instanceof Error ? err.message : String(err)}\n${USAGE}`);
  }
  if (values.help) {
    print(USAGE);
    return undefined;
  }
  const interval = values.interval;
  let seconds: number;
  try {
    seconds = parseDurationSeconds(interval);
  } catch {
    throw new UsageError(`--interval: "${interval}" is not a duration such as 5s\n${USAGE}`);
  }
  if (seconds < 1 || seconds > 600) throw new UsageError(`--interval must be between 1s and 10m, got ${interval}`);
  const rps = Number(values.rps);
  if (!Number.isFinite(rps) || rps < 1 || rps > 10_000)
    throw new UsageError(`--rps must be 1..10000, got ${values.rps}`);
  if (!/^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/.test(values.namespace)) {
    throw new UsageError(`--namespace: "${values.namespace}" is not a namespace name`);
  }
  return { keep: values.keep, interval, namespace: values.namespace, rps };
}

async function main(): Promise<number> {
  const flags = parseFlags();
  if (flags === undefined) return 0;
  process.on("SIGINT", onSignal);
  process.on("SIGTERM", onSignal);
  const started = Date.now();

  print(style.bold("canaryapp demo: progressive delivery on Istio, on this machine"));
  print(
    style.dim(
      "no Docker, no cloud: kwok plays the nodes, a simulator plays Istio's sidecars and telemetry, Prometheus is real",
    ),
  );
  print();
  let env: Environment | undefined;
  try {
    env = await startEnvironment({
      namespace: flags.namespace,
      rps: flags.rps,
      signal: interrupt.signal,
      progress: (part, detail, ms) =>
        print(
          `  ${style.good("✔")} ${part.padEnd(18)} ${style.dim(`${(ms / 1000).toFixed(1)}s`.padStart(6))}  ${detail}`,
        ),
    });
    print(`  ${style.dim("controller log:")} ${env.controller.logPath}`);
    if (interrupt.signal.aborted) return 130;
    const environmentMs = Date.now() - started;
    const { result, close } = await playStory(env, flags, started);
    const storyMs = Date.now() - started - environmentMs;
    if (!flags.keep) await close();
    await epilogue(env, result);
    print(
      `${style.bold("wall time")} ${duration(Date.now() - started)} ${style.dim(`(start-up ${duration(environmentMs)}, story ${duration(storyMs)})`)}`,
    );
    if (flags.keep) {
      if (!interrupt.signal.aborted) await keepRunning(env, flags);
      await close();
    }
    return result.ok ? 0 : 1;
  } catch (err) {
    if (interrupt.signal.aborted) return 130;
    print();
    print(style.bad("the demo failed:"));
    reportFailure(err);
    if (env) print(`controller log: ${env.controller.logPath}`);
    return err instanceof PrerequisiteError ? 2 : 1;
  } finally {
    if (env) {
      out.write(style.dim("stopping the controller, simulator, Prometheus and control plane… "));
      await env.stop();
      print(style.dim("done; nothing is left running."));
      print(style.dim(`controller log kept: ${env.controller.logPath}`));
    }
  }
}

/** The story with its live view; the view keeps following the app until `close` (for --keep). */
async function playStory(
  env: Environment,
  flags: Flags,
  started: number,
): Promise<{ result: StoryResult; close: () => Promise<void> }> {
  const seed = await readSample();
  const recorder = await StoryRecorder.start(env.kc, flags.namespace, seed.metadata.name ?? "canaryapp-sample");
  const view = new LiveView({
    recorder,
    traffic: () => env.simulator.state(),
    startedAt: started,
    steps: weightSequence(seed.spec.analysis).length,
    write: print,
    style,
  });
  print();
  print(
    style.dim(
      `each line: time since start · phase · test step · route weights (${style.primary("█")} primary ${style.secondary("▒")} secondary) · pods · last analysis`,
    ),
  );
  print(style.dim(`every command below uses: export KUBECONFIG=${env.kubeconfigPath}`));
  const close = async () => {
    view.stop();
    await recorder.stop();
  };
  try {
    const result = await runStory(
      {
        kubectl: env.kubectl,
        recorder,
        namespace: flags.namespace,
        prometheusURL: env.prometheus.url,
        rps: flags.rps,
        signal: interrupt.signal,
      },
      {
        chapter: (index, title) => {
          view.traffic(true);
          print();
          print(style.bold(`── ${index}. ${title} ${"─".repeat(Math.max(4, 60 - title.length))}`));
        },
        command: (display, input) => {
          print(`${style.bold("$")} ${display}${input !== undefined ? style.dim(" <<EOF") : ""}`);
          if (input !== undefined) {
            for (const line of input.trimEnd().split("\n")) print(style.dim(`    ${line}`));
            print(style.dim("  EOF"));
          }
        },
        note: (text) => print(style.dim(`  ${text}`)),
      },
      { interval: flags.interval },
    );
    view.traffic(true);
    return { result, close };
  } catch (err) {
    await close();
    throw err;
  }
}

async function epilogue(env: Environment, result: StoryResult): Promise<void> {
  const { namespace } = env;
  const name = result.app.metadata.name ?? "canaryapp-sample";
  print();
  print(style.bold(`── the end ${"─".repeat(55)}`));
  const show = async (args: string[]) => {
    print(`${style.bold("$")} ${env.kubectl.display(args)}`);
    const text = await env.kubectl.run(args);
    for (const line of text.trimEnd().split("\n")) print(`  ${line}`);
  };
  await show(["-n", namespace, "get", "canaryapp"]);
  await show([
    "-n",
    namespace,
    "get",
    "canaryapp",
    name,
    "-o",
    `jsonpath={range .status.failedImages[*]}{.image}{"  reason="}{.reason}{"  "}{.metric}{"="}{.value}{"\\n  "}{.message}{"\\n"}{end}`,
  ]);
  print();
  const checks = [...result.checks, ...trafficChecks(env.simulator.state(), { namespace, name })];
  result.ok = checks.every((c) => c.ok);
  for (const check of checks) {
    print(`  ${check.ok ? style.good("✔") : style.bad("✘")} ${check.name}  ${style.dim(check.detail)}`);
  }
  print();
  print(result.ok ? style.good("the story ended as it should") : style.bad("the story did not end as it should"));
}

async function keepRunning(env: Environment, flags: Flags): Promise<void> {
  print();
  print(style.bold("everything keeps running (--keep); in another shell:"));
  print(`  export KUBECONFIG=${shellQuote(env.kubeconfigPath)}`);
  print(`  export PATH=${shellQuote(dirname(env.kubectl.binary))}:$PATH`);
  print(`  kubectl -n ${flags.namespace} get canaryapp,deployments,pods,services,virtualservices,destinationrules`);
  print(
    `  kubectl -n ${flags.namespace} patch canaryapp canaryapp-sample --type=merge -p '{"spec":{"image":"...:v4"}}'`,
  );
  print(
    `  Prometheus:        ${env.prometheus.url}  (try: sum by (destination_workload, response_code) (rate(istio_requests_total{reporter="destination"}[1m])))`,
  );
  print(`  simulator state:   ${env.simulator.url}/state`);
  print(`  controller:        ${env.controller.url}/metrics, log ${env.controller.logPath}`);
  print(style.dim("changes keep showing below; Ctrl-C stops everything"));
  await new Promise<void>((resolve) => interrupt.signal.addEventListener("abort", () => resolve(), { once: true }));
}

main().then(
  (code) => process.exit(code),
  (err: unknown) => {
    reportFailure(err);
    process.exit(err instanceof UsageError ? 2 : 1);
  },
);

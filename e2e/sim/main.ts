#!/usr/bin/env node
/**
 * The mesh traffic simulator as a command:
 *   node dist/e2e/sim/main.js [--kubeconfig FILE] [--namespace NS]... [--port 0] [--rps 20] [--behaviour FILE]
 *                             [--seed 1] [--tick-ms 250] [--outside-mesh-rps 0] [--propagation-ticks 0]
 * Prints its URL on stdout (scrape `<url>/metrics`; `<url>/state` shows what it reads and sends); logs go
 * to stderr. Ctrl-C stops it.
 */
import { parseArgs } from "node:util";
import { cliLogger, reportFailure, UsageError } from "../cluster/cli-common.js";
import { loadBehaviourFile } from "./behaviour.js";
import { DEFAULT_RPS, DEFAULT_TICK_MS, startSimulator } from "./simulator.js";

function number(flag: string, value: string | undefined, fallback: number, min: number): number {
  if (value === undefined) return fallback;
  const n = Number(value);
  if (value.trim() === "" || !Number.isFinite(n) || n < min) {
    throw new UsageError(`--${flag} must be a number >= ${min}, got ${JSON.stringify(value)}`);
  }
  return n;
}

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      kubeconfig: { type: "string" },
      namespace: { type: "string", multiple: true },
      port: { type: "string" },
      rps: { type: "string" },
      behaviour: { type: "string" },
      seed: { type: "string" },
      "tick-ms": { type: "string" },
      "source-namespace": { type: "string" },
      "outside-mesh-rps": { type: "string" },
      "propagation-ticks": { type: "string" },
    },
  });
  const port = number("port", values.port, 0, 0);
  if (!Number.isInteger(port) || port > 65535) throw new UsageError(`--port must be 0..65535, got ${port}`);
  const simulator = await startSimulator({
    ...(values.kubeconfig ? { kubeconfig: values.kubeconfig } : {}),
    namespaces: values.namespace ?? [],
    port,
    rps: number("rps", values.rps, DEFAULT_RPS, 0),
    tickMs: number("tick-ms", values["tick-ms"], DEFAULT_TICK_MS, 1),
    seed: number("seed", values.seed, 1, 0),
    outsideMeshRps: number("outside-mesh-rps", values["outside-mesh-rps"], 0, 0),
    propagationTicks: number("propagation-ticks", values["propagation-ticks"], 0, 0),
    ...(values.behaviour ? { behaviours: await loadBehaviourFile(values.behaviour) } : {}),
    ...(values["source-namespace"] ? { sourceNamespace: values["source-namespace"] } : {}),
    log: cliLogger(),
  });
  process.stdout.write(`${simulator.url}\n`);
  const stop = () => {
    void simulator.stop().finally(() => process.exit(0));
  };
  process.once("SIGINT", stop);
  process.once("SIGTERM", stop);
}

main().catch((err: unknown) => {
  reportFailure(err);
  process.exit(err instanceof UsageError ? 2 : 1);
});

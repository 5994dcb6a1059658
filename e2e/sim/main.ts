#!/usr/bin/env node
/**
 * The mesh traffic simulator as a command:
 *   node dist/e2e/sim/main.js [--kubeconfig FILE] [--namespace NS]... [--port 0] [--rps 20] [--behaviour FILE]
 *                             [--seed 1] [--tick-ms 250] [--outside-mesh-rps 0] [--propagation-ticks 0]
 *                             [--gateway-rps 0] [--gateway-namespace istio-system]...
 *                             [--header NAME=VALUE[:FRACTION]]... [--cookie NAME=VALUE[:FRACTION]]...
 *                             [--route-status-delay-ticks 0] [--no-route-status]
 * Prints its URL on stdout (scrape `<url>/metrics`; `<url>/state` shows what it reads and sends); logs go
 * to stderr. Ctrl-C stops it.
 *
 * --gateway-rps: requests per second per app entering through the Gateways its HTTPRoutes name.
 * --header x-canary=always:0.25: a quarter of the requests carry `x-canary: always`; --cookie canary=1:0.1:
 * a tenth carry `canary=1` in their `cookie` header (FRACTION 0..1, default 1).
 * --route-status-delay-ticks: the HTTPRoute status the simulator writes (as Istio) lags this many ticks;
 * --no-route-status: it writes none.
 */
import { parseArgs } from "node:util";
import { cliLogger, reportFailure, UsageError } from "../cluster/cli-common.js";
import { loadBehaviourFile } from "./behaviour.js";
import { parseHeaderSpec, type HeaderSpec } from "./request-headers.js";
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
      "gateway-rps": { type: "string" },
      "gateway-namespace": { type: "string", multiple: true },
      header: { type: "string", multiple: true },
      cookie: { type: "string", multiple: true },
      "route-status-delay-ticks": { type: "string" },
      "no-route-status": { type: "boolean", default: false },
    },
  });
  const specs = (flag: "header" | "cookie", texts: string[] | undefined): HeaderSpec[] =>
    (texts ?? []).map((text) => {
      try {
        return parseHeaderSpec(text, flag);
      } catch (err) {
        throw new UsageError(`--${flag}: ${(err as Error).message}`);
      }
    });
  const requestHeaders = [...specs("header", values.header), ...specs("cookie", values.cookie)];
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
    gatewayRps: number("gateway-rps", values["gateway-rps"], 0, 0),
    routeStatusDelayTicks: number("route-status-delay-ticks", values["route-status-delay-ticks"], 0, 0),
    ...(values["gateway-namespace"] ? { gatewayNamespaces: values["gateway-namespace"] } : {}),
    ...(requestHeaders.length > 0 ? { requestHeaders } : {}),
    ...(values["no-route-status"] ? { routeStatus: false as const } : {}),
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

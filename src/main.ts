#!/usr/bin/env node
/** The controller process: configuration, logging, the controller, the HTTP server and signal handling. */
import { pino } from "pino";
import { startController } from "./app.js";
import { MetricsObserver } from "./canary/metrics-observer.js";
import { ConfigError, loadConfig, usage } from "./config.js";
import { toError } from "./kube/errors.js";
import { startHttpServer } from "./server/http.js";
import { ControllerMetrics } from "./server/metrics.js";

async function main(): Promise<number> {
  const argv = process.argv.slice(2);
  if (argv.includes("--help") || argv.includes("-h")) {
    console.log(usage());
    return 0;
  }
  let config;
  try {
    config = loadConfig(argv, process.env);
  } catch (error) {
    if (error instanceof ConfigError) {
      console.error(`canaryapp: ${error.message}`);
      return 2;
    }
    throw error;
  }
  const log = pino({ level: config.logLevel, base: { identity: config.leaderElection.identity } });
  const metrics = new ControllerMetrics();
  const controller = startController({ config, log, metrics, observer: new MetricsObserver(metrics) });
  metrics.setLeaderSource(() => controller.isLeader());
  const server = await startHttpServer({
    host: config.httpAddress.host,
    port: config.httpAddress.port,
    ready: () => ({ ready: controller.ready(), reason: "caches not synced" }),
    healthy: () => controller.health(),
    metrics,
    log,
  });
  log.info({ namespaces: config.namespaces.length ? config.namespaces : "all", port: server.port }, "started");

  let stopping = false;
  const shutdown = async (signal: string): Promise<void> => {
    if (stopping) return;
    stopping = true;
    log.info({ signal }, "shutting down: finishing in-flight reconciles");
    await controller.stop();
  };
  process.on("SIGTERM", () => void shutdown("SIGTERM"));
  process.on("SIGINT", () => void shutdown("SIGINT"));

  const reason = await controller.done;
  await server.close();
  if (reason === "lost") {
    // Another replica leads now; exit so this one restarts with clean caches and campaigns again.
    log.error("lost the leader lease; exiting");
    return 1;
  }
  log.info("stopped");
  return 0;
}

main().then(
  (code) => process.exit(code),
  (error: unknown) => {
    console.error(`canaryapp: ${toError(error).stack ?? String(error)}`);
    process.exit(1);
  },
);

/**
 * The mesh traffic simulator: stands in for Istio's data plane and telemetry where pods are fake. Each
 * tick it reads the cluster (the VirtualService's or HTTPRoutes' routes, Gateways, Services and their Ready
 * pods), sends every app its share of simulated requests (from callers in the mesh, outside it, and through
 * its Gateways), counts them in Istio's metrics as the proxies would report them (docs/istio-telemetry.md),
 * served on /metrics for Prometheus, and, as Istio's Gateway API implementation, writes the HTTPRoutes'
 * `status.parents`; /state shows what it read and sent.
 */
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { pino, type Logger } from "pino";
import { createClients, loadKubeConfig, type PooledKubeConfig } from "../../src/kube/client.js";
import { DEFAULT_BEHAVIOURS, type BehaviourTable } from "./behaviour.js";
import { watchCluster, type SnapshotSource } from "./cluster-watch.js";
import { simulateGatewayRequests } from "./gateway-traffic.js";
import { Ledger, type SimulatorState } from "./ledger.js";
import { buildAppViews, livePods, type AppView } from "./mesh-view.js";
import { seededRandom, type Random } from "./prng.js";
import type { HeaderSpec } from "./request-headers.js";
import { clusterRouteStatusWriter, RouteStatusReporter, type RouteStatusWriter } from "./route-status-reporter.js";
import { IstioTelemetry } from "./telemetry.js";
import { requestsThisTick, simulateOutsideMesh, simulateRequests } from "./traffic.js";

export interface SimulatorOptions {
  /** The cluster to read: a kubeconfig path or a loaded KubeConfig. Ignored when `source` is given. */
  kubeconfig?: string | PooledKubeConfig;
  /** Reads the cluster some other way (tests); no watch is started. */
  source?: SnapshotSource;
  /** Namespaces to watch; all when empty or absent. */
  namespaces?: readonly string[];
  /** Namespaces whose Gateways are read besides `namespaces` (default istio-system). */
  gatewayNamespaces?: readonly string[];
  /** Port of the HTTP server on `host`; 0 (default) takes a free one. */
  port?: number;
  /** Default 127.0.0.1. */
  host?: string;
  /** Requests per second per app. Default 20. */
  rps?: number;
  /** Time between two ticks. Default 250 ms. */
  tickMs?: number;
  behaviours?: BehaviourTable;
  /** Seed of the random source (default 1), unless `random` is given. */
  seed?: number;
  random?: Random;
  /** source_workload_namespace of the simulated callers; the app's own namespace when absent. */
  sourceNamespace?: string;
  /**
   * Callers without a sidecar, in requests per second per app (default 0): they reach the ready endpoints
   * of the app's Service, whatever the VirtualService says.
   */
  outsideMeshRps?: number;
  /**
   * Requests per second per app entering through the Gateways its HTTPRoutes name as parents (default 0),
   * each to one of them with one of the route's hostnames as Host, both at random.
   */
  gatewayRps?: number;
  /**
   * Headers and cookies some requests carry (in the mesh and through Gateways), each on its own fraction of
   * them (request-headers.ts): routes that match on them are exercised. Default none.
   */
  requestHeaders?: readonly HeaderSpec[];
  /**
   * Where HTTPRoute status is written: the cluster's status subresource by default when the simulator
   * watches a cluster that serves HTTPRoutes; a test's writer; or false, never.
   */
  routeStatus?: RouteStatusWriter | false;
  /** How many ticks the implementation's status lags the API server (default 0; see RouteStatusReporter). */
  routeStatusDelayTicks?: number;
  /**
   * How many ticks the proxies' view (routes and endpoints) lags the API server (default 0): Envoy and
   * kube-proxy learn a change a moment after it is made, so a pod deleted right after the route stops
   * sending to it still gets that moment's requests, which are reset.
   */
  propagationTicks?: number;
  /** Tick on a timer (default true); tests pass false and call `tick()`. */
  autoTick?: boolean;
  log?: Logger;
}

export interface Simulator {
  /** `http://host:port`, serving /metrics, /state and /healthz. */
  readonly url: string;
  /** `host:port`, as a Prometheus scrape target. */
  readonly target: string;
  /** Reads the cluster once, sends one tick's worth of requests to every app, and starts the status writes. */
  tick(): void;
  /** Resolves once the route status writes the latest tick started have settled. */
  statusWritten(): Promise<void>;
  state(): SimulatorState;
  /** Stops ticking, the watch and the HTTP server. Idempotent. */
  stop(): Promise<void>;
}

export const DEFAULT_RPS = 20;
export const DEFAULT_TICK_MS = 250;

/** Starts the simulator and resolves once its cluster watch has listed everything and its server listens. */
export async function startSimulator(opts: SimulatorOptions = {}): Promise<Simulator> {
  const log = opts.log ?? pino({ level: "silent" });
  const rps = opts.rps ?? DEFAULT_RPS;
  const tickMs = opts.tickMs ?? DEFAULT_TICK_MS;
  if (!(rps >= 0) || !(tickMs > 0))
    throw new Error(`simulator: rps must be >= 0 and tickMs > 0 (got ${rps}, ${tickMs})`);
  const behaviours = opts.behaviours ?? DEFAULT_BEHAVIOURS;
  const random = opts.random ?? seededRandom(opts.seed ?? 1);
  const telemetry = new IstioTelemetry(opts.sourceNamespace);
  const ledger = new Ledger();
  const carry = new Map<string, number>();
  const outsideCarry = new Map<string, number>();
  const outsideMeshRps = opts.outsideMeshRps ?? 0;
  const propagationTicks = Math.max(0, Math.floor(opts.propagationTicks ?? 0));
  const gatewayRps = opts.gatewayRps ?? 0;
  const gatewayCarry = new Map<string, number>();
  const headers = opts.requestHeaders ?? [];
  if (!(gatewayRps >= 0)) throw new Error(`simulator: gatewayRps must be >= 0 (got ${gatewayRps})`);
  /** The views of the last ticks, newest last: the proxies route by the oldest. */
  const seen: AppView[][] = [];
  /** Apps whose primary the proxies have seen Ready once: before that the app is not up, nothing is bad yet. */
  const up = new Set<string>();

  let watch: { stop(): Promise<void> } | undefined;
  let source = opts.source;
  let writer = opts.routeStatus === false ? undefined : opts.routeStatus;
  if (!source) {
    let kc: PooledKubeConfig;
    try {
      kc = typeof opts.kubeconfig === "object" ? opts.kubeconfig : loadKubeConfig(opts.kubeconfig);
    } catch (err) {
      throw new Error(`simulator: cannot load the kubeconfig`, { cause: err });
    }
    const cluster = await watchCluster(kc, {
      namespaces: opts.namespaces ?? [],
      ...(opts.gatewayNamespaces !== undefined ? { gatewayNamespaces: opts.gatewayNamespaces } : {}),
      log,
    });
    watch = cluster;
    source = cluster;
    if (opts.routeStatus === undefined && cluster.servesHTTPRoutes)
      writer = clusterRouteStatusWriter(createClients(kc).customObjects);
  }
  const reader = source;
  const statusReporter =
    writer === undefined
      ? undefined
      : new RouteStatusReporter({
          writer,
          log,
          ...(opts.routeStatusDelayTicks !== undefined ? { delayTicks: opts.routeStatusDelayTicks } : {}),
        });
  let statusWrites: Promise<void> = Promise.resolve();

  const tick = (): void => {
    const snapshot = reader.snapshot();
    if (statusReporter !== undefined) {
      statusWrites = statusReporter.tick(snapshot).catch((err: unknown) => {
        log.error({ err }, "route status pass failed");
      });
    }
    const now = buildAppViews(
      snapshot,
      opts.sourceNamespace !== undefined ? { callerNamespace: opts.sourceNamespace } : {},
    );
    seen.push(now);
    while (seen.length > propagationTicks + 1) seen.shift();
    // The proxies' view: as the cluster was `propagationTicks` ago (an app not known then gets nothing).
    const views = seen[0] ?? now;
    // With no lag, a view never names a deleted pod; with lag, one that did is reset.
    const live = propagationTicks > 0 ? livePods(snapshot) : undefined;
    ledger.setViews(now);
    ledger.ticks++;
    for (const app of views) {
      const key = `${app.namespace}/${app.name}`;
      if (app.tracks.primary.readyPods.length > 0) up.add(key);
      const due = requestsThisTick(rps, tickMs, carry.get(key) ?? 0);
      carry.set(key, due.carry);
      const requests = simulateRequests(app, due.count, behaviours, random, live, headers);
      telemetry.record(app, requests);
      ledger.record(app, requests, false, up.has(key));
      if (gatewayRps > 0 && app.ingress.length > 0) {
        const through = requestsThisTick(gatewayRps, tickMs, gatewayCarry.get(key) ?? 0);
        gatewayCarry.set(key, through.carry);
        for (const sent of simulateGatewayRequests(app, through.count, behaviours, random, live, headers)) {
          telemetry.recordGateway(app, sent.requests, sent.ingress.workload);
          ledger.record(app, sent.requests, false, up.has(key), sent.ingress.gateway);
        }
      }
      if (outsideMeshRps > 0) {
        const outside = requestsThisTick(outsideMeshRps, tickMs, outsideCarry.get(key) ?? 0);
        outsideCarry.set(key, outside.carry);
        // No sidecar at the caller: only the pod's sidecar reports what reaches it (source "unknown").
        const outsideRequests = simulateOutsideMesh(app, outside.count, behaviours, random, live);
        telemetry.record(app, outsideRequests, true);
        ledger.record(app, outsideRequests, true, up.has(key));
      }
    }
  };

  const server = createServer((req, res) => {
    handle(req, res).catch((err: unknown) => {
      log.error({ err, path: req.url }, "simulator request failed");
      if (!res.headersSent) res.writeHead(500);
      res.end();
    });
  });
  const handle = async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    const path = new URL(req.url ?? "/", "http://simulator").pathname;
    if (path === "/metrics") {
      const body = await telemetry.metrics();
      res.writeHead(200, { "content-type": telemetry.contentType }).end(body);
    } else if (path === "/state") {
      res
        .writeHead(200, { "content-type": "application/json" })
        .end(JSON.stringify(ledger.state(rps, tickMs), null, 2));
    } else if (path === "/healthz") {
      res.writeHead(200, { "content-type": "text/plain" }).end("ok\n");
    } else {
      res.writeHead(404, { "content-type": "text/plain" }).end("not found: try /metrics or /state\n");
    }
  };
  const host = opts.host ?? "127.0.0.1";
  try {
    await new Promise<void>((resolve, reject) => {
      server.once("error", reject);
      server.listen(opts.port ?? 0, host, resolve);
    });
  } catch (err) {
    await watch?.stop();
    throw new Error(`simulator: cannot listen on ${host}:${opts.port ?? 0}`, { cause: err });
  }
  const { port } = server.address() as AddressInfo;

  const timer =
    opts.autoTick === false
      ? undefined
      : setInterval(() => {
          try {
            tick();
          } catch (err) {
            log.error({ err }, "simulator tick failed");
          }
        }, tickMs);

  let stopped: Promise<void> | undefined;
  log.info({ url: `http://${host}:${port}`, rps, tickMs }, "mesh traffic simulator started");
  return {
    url: `http://${host}:${port}`,
    target: `${host}:${port}`,
    tick,
    statusWritten: () => statusWrites,
    state: () => ledger.state(rps, tickMs),
    stop: () =>
      (stopped ??= (async () => {
        clearInterval(timer);
        server.closeAllConnections();
        await Promise.all([new Promise<void>((resolve) => server.close(() => resolve())), watch?.stop(), statusWrites]);
      })()),
  };
}

import type { IncomingMessage, ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import type { Logger } from "pino";
import { toError } from "../kube/errors.js";

// The CommonJS object, not an ES import: importing node:http reads its lazy `WebSocket` export, which loads
// Node's bundled undici (ADR 0017).
const { createServer } = process.getBuiltinModule("node:http");

/** Readiness: a boolean, or a state with the reason shown when not ready. */
export type Readiness = boolean | { ready: boolean; reason?: string };

export interface HttpServerOptions {
  /** Address to bind. Default 0.0.0.0. */
  host?: string;
  /** Port; 0 picks a free one (tests). */
  port: number;
  /** Asked on every /readyz. */
  ready: () => Readiness;
  /** Asked on every /healthz (liveness); without it, /healthz answers 200 while the process serves. */
  healthy?: () => { healthy: boolean; reason?: string };
  /** A prom-client registry, or anything with the same two members (e.g. ControllerMetrics). */
  metrics: { readonly contentType: string; metrics(): Promise<string> };
  log: Logger;
}

export interface RunningHttpServer {
  /** The port actually bound. */
  port: number;
  /** Stops accepting connections, closes open ones, resolves when closed. */
  close(): Promise<void>;
}

/**
 * Serves the probes and metrics:
 * - `/healthz`: 200 while `healthy()` says the controller can do its job, else 503 with why (liveness);
 * - `/readyz`: 200 when `ready()` says so, else 503 with a short reason (readiness);
 * - `/metrics`: the Prometheus exposition text.
 * GET and HEAD only.
 */
export async function startHttpServer(options: HttpServerOptions): Promise<RunningHttpServer> {
  const log = options.log.child({ component: "http" });
  const server = createServer((req, res) => {
    handle(req, res, options).catch((error: unknown) => {
      log.error({ err: toError(error), path: req.url }, "request failed");
      if (!res.headersSent) send(res, 500, "text/plain; charset=utf-8", "internal error\n");
      else res.destroy();
    });
  });
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(options.port, options.host ?? "0.0.0.0", () => {
      server.off("error", reject);
      resolve();
    });
  });
  const { port } = server.address() as AddressInfo;
  log.info({ host: options.host ?? "0.0.0.0", port }, "serving /healthz /readyz /metrics");
  return {
    port,
    close: () =>
      new Promise<void>((resolve, reject) => {
        server.close((err) => (err ? reject(err) : resolve()));
        // Keep-alive connections (Prometheus, kubelet) would otherwise hold close() open.
        server.closeAllConnections();
      }),
  };
}

async function handle(req: IncomingMessage, res: ServerResponse, options: HttpServerOptions): Promise<void> {
  if (req.method !== "GET" && req.method !== "HEAD") {
    res.setHeader("allow", "GET, HEAD");
    send(res, 405, "text/plain; charset=utf-8", "method not allowed\n");
    return;
  }
  const path = new URL(req.url ?? "/", "http://localhost").pathname;
  switch (path) {
    case "/healthz": {
      const state = readiness(() => {
        const health = options.healthy?.() ?? { healthy: true };
        return { ready: health.healthy, reason: health.reason ?? "unhealthy" };
      });
      if (state.ready) send(res, 200, "text/plain; charset=utf-8", "ok\n");
      else send(res, 503, "text/plain; charset=utf-8", `unhealthy: ${state.reason}\n`);
      return;
    }
    case "/readyz": {
      const state = readiness(options.ready);
      if (state.ready) send(res, 200, "text/plain; charset=utf-8", "ok\n");
      else send(res, 503, "text/plain; charset=utf-8", `not ready: ${state.reason}\n`);
      return;
    }
    case "/metrics": {
      const text = await options.metrics.metrics();
      send(res, 200, options.metrics.contentType, text);
      return;
    }
    default:
      send(res, 404, "text/plain; charset=utf-8", "not found\n");
  }
}

function readiness(ready: () => Readiness): { ready: boolean; reason: string } {
  try {
    const state = ready();
    if (typeof state === "boolean") return { ready: state, reason: "not ready" };
    return { ready: state.ready, reason: state.reason ?? "not ready" };
  } catch (error) {
    return { ready: false, reason: `readiness check failed: ${toError(error).message}` };
  }
}

function send(res: ServerResponse, status: number, contentType: string, body: string): void {
  res.writeHead(status, { "content-type": contentType, "content-length": Buffer.byteLength(body) });
  res.end(res.req.method === "HEAD" ? undefined : body);
}

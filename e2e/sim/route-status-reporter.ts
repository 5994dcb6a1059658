/**
 * The simulator as the Gateway API implementation: it writes each HTTPRoute's `status.parents` as Istio
 * would (route-status.ts), only when that differs from what the route has, and optionally a number of
 * ticks late (an implementation that has not caught up yet). The writing itself is injected: the
 * status subresource of the cluster (clusterRouteStatusWriter), or a test's.
 */
import { PatchStrategy, setHeaderOptions, type CustomObjectsApi } from "@kubernetes/client-node";
import type { Logger } from "pino";
import type { ClusterSnapshot } from "./cluster-snapshot.js";
import { objectKey, type RouteParentStatusLike } from "./gateway-api-objects.js";
import { evaluateGatewayApi } from "./gateway-api-view.js";
import { parentOutcomes, routeParentStatuses } from "./route-status.js";

/** Replaces a route's `status.parents`; rejects on a conflict (the route changed since it was read). */
export interface RouteStatusWriter {
  write(
    route: { namespace: string; name: string; resourceVersion?: string },
    parents: RouteParentStatusLike[],
  ): Promise<void>;
}

export interface RouteStatusOptions {
  writer: RouteStatusWriter;
  /** How many ticks the implementation lags the API server (default 0). */
  delayTicks?: number;
  log?: Logger;
  now?: () => Date;
  /** A write not yet seen back by the watch is not repeated for this long (default 5 s). */
  resendAfterMs?: number;
}

const MERGE_PATCH = setHeaderOptions("Content-Type", PatchStrategy.MergePatch);

/**
 * Writes through the status subresource with a JSON merge patch that replaces `status.parents` whole (the
 * other controllers' entries are in it as read) and carries the route's resourceVersion, so that a route
 * changed since it was read is not written over (409; the next tick tries again with what the watch brings).
 */
export function clusterRouteStatusWriter(
  customObjects: CustomObjectsApi,
  fieldManager = "mesh-traffic-simulator",
): RouteStatusWriter {
  return {
    async write(route, parents) {
      await customObjects.patchNamespacedCustomObjectStatus(
        {
          group: "gateway.networking.k8s.io",
          version: "v1",
          plural: "httproutes",
          namespace: route.namespace,
          name: route.name,
          body: {
            metadata: route.resourceVersion !== undefined ? { resourceVersion: route.resourceVersion } : {},
            status: { parents },
          },
          fieldManager,
        },
        MERGE_PATCH,
      );
    },
  };
}

export class RouteStatusReporter {
  private readonly history: ClusterSnapshot[] = [];
  private readonly pending = new Map<string, { json: string; at: number }>();
  private readonly inFlight = new Set<string>();
  private readonly delay: number;
  /** Status writes made so far, and failed. */
  writes = 0;
  failures = 0;

  constructor(private readonly opts: RouteStatusOptions) {
    this.delay = Math.max(0, Math.floor(opts.delayTicks ?? 0));
  }

  /**
   * One pass: the routes as the implementation sees them (`delayTicks` ago) against their status as it is
   * now. Resolves once this pass's writes have settled (tests wait for it; the simulator does not).
   */
  async tick(now: ClusterSnapshot): Promise<void> {
    this.history.push(now);
    while (this.history.length > this.delay + 1) this.history.shift();
    const seen = this.history[0] ?? now;
    const current = new Map((now.httpRoutes ?? []).map((r) => [objectKey(r.metadata), r]));
    const exists = () => ({ service: { name: "", namespace: "", host: "" }, endpoints: [] });
    const gatewayApi = evaluateGatewayApi(seen, (ref) =>
      (seen.services ?? []).some((s) => s.metadata?.namespace === ref.namespace && s.metadata.name === ref.name)
        ? exists()
        : null,
    );
    const clock = this.opts.now?.() ?? new Date();
    const writes: Promise<void>[] = [];
    for (const evaluated of gatewayApi.routes) {
      const key = objectKey(evaluated.route.metadata);
      const live = current.get(key);
      // Deleted since: nothing to write to. A route is written once at a time.
      if (live === undefined || this.inFlight.has(key)) continue;
      const have = live.status?.parents ?? [];
      const want = routeParentStatuses(
        parentOutcomes(evaluated.parents, { mesh: evaluated.mesh.error, gateway: evaluated.gateway.error }),
        evaluated.route.metadata?.namespace ?? "",
        evaluated.route.metadata?.generation,
        have,
        clock,
      );
      const json = canonicalJson(want);
      if (json === canonicalJson(have)) {
        this.pending.delete(key);
        continue;
      }
      const sent = this.pending.get(key);
      if (sent !== undefined && sent.json === json && clock.getTime() - sent.at < (this.opts.resendAfterMs ?? 5000)) {
        continue;
      }
      this.inFlight.add(key);
      this.pending.set(key, { json, at: clock.getTime() });
      const meta = live.metadata ?? {};
      writes.push(
        this.opts.writer
          .write(
            {
              namespace: meta.namespace ?? "",
              name: meta.name ?? "",
              ...(meta.resourceVersion !== undefined ? { resourceVersion: meta.resourceVersion } : {}),
            },
            want,
          )
          .then(
            () => {
              this.writes++;
            },
            (err: unknown) => {
              this.failures++;
              this.pending.delete(key);
              this.opts.log?.debug({ err, route: key }, "route status write failed; trying again next tick");
            },
          )
          .finally(() => this.inFlight.delete(key)),
      );
    }
    await Promise.all(writes);
  }
}

/** JSON with object keys sorted: the same content reads the same whatever order the API server gave its keys. */
export function canonicalJson(value: unknown): string {
  return JSON.stringify(value, (_key, v: unknown) =>
    v !== null && typeof v === "object" && !Array.isArray(v)
      ? Object.fromEntries(Object.entries(v).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)))
      : v,
  );
}

import assert from "node:assert/strict";
import { describe, test } from "node:test";
import type { ClusterSnapshot } from "./cluster-snapshot.js";
import type { HTTPRouteLike, RouteParentStatusLike } from "./gateway-api-objects.js";
import { gatewayApiApp, pod } from "./fixtures.test-helpers.js";
import { canonicalJson, RouteStatusReporter, type RouteStatusWriter } from "./route-status-reporter.js";

/** A writer that stores what it is given into the snapshot's route, as the watch would bring it back. */
function storingWriter(snapshot: ClusterSnapshot, calls: string[], failFirst = 0): RouteStatusWriter {
  let failures = failFirst;
  return {
    write(route, parents) {
      calls.push(`${route.namespace}/${route.name}@${route.resourceVersion ?? "-"}`);
      if (failures-- > 0) return Promise.reject(new Error("conflict"));
      const target = snapshot.httpRoutes?.find((r) => r.metadata?.name === route.name) as HTTPRouteLike;
      target.status = { parents: structuredClone(parents) };
      return Promise.resolve();
    },
  };
}
const accepted = (route: HTTPRouteLike | undefined) =>
  route?.status?.parents?.map((p: RouteParentStatusLike) =>
    p.conditions?.map((c) => `${c.type}=${c.status}@${c.observedGeneration}`),
  );

describe("RouteStatusReporter", () => {
  const snapshotWith = () => {
    const snapshot = gatewayApiApp("web", "shop", [90, 10], [pod("web", "shop", "primary", "p", "web:v1")], {
      generation: 1,
    });
    const route = snapshot.httpRoutes?.[0];
    if (route?.metadata) route.metadata.resourceVersion = "7";
    return snapshot;
  };

  test("writes once, then nothing at rest; a new generation is written again", async () => {
    const snapshot = snapshotWith();
    const calls: string[] = [];
    const reporter = new RouteStatusReporter({ writer: storingWriter(snapshot, calls) });
    await reporter.tick(snapshot);
    assert.deepEqual(calls, ["shop/web@7"]);
    assert.deepEqual(accepted(snapshot.httpRoutes?.[0]), [["Accepted=True@1", "ResolvedRefs=True@1"]]);
    for (let i = 0; i < 3; i++) await reporter.tick(snapshot);
    assert.equal(calls.length, 1, "no write at rest");
    const meta = snapshot.httpRoutes?.[0]?.metadata;
    assert.ok(meta);
    meta.generation = 2;
    await reporter.tick(snapshot);
    assert.deepEqual(accepted(snapshot.httpRoutes?.[0]), [["Accepted=True@2", "ResolvedRefs=True@2"]]);
    assert.equal(reporter.writes, 2);
  });

  test("a write not yet seen back is not repeated; a failed one is tried again next tick", async () => {
    const snapshot = snapshotWith();
    const calls: string[] = [];
    const lost: RouteStatusWriter = { write: () => (calls.push("write"), Promise.resolve()) };
    const reporter = new RouteStatusReporter({ writer: lost });
    await reporter.tick(snapshot);
    await reporter.tick(snapshot);
    assert.equal(calls.length, 1);
    const failing = new RouteStatusReporter({ writer: storingWriter(snapshot, calls, 1) });
    await failing.tick(snapshot);
    await failing.tick(snapshot);
    assert.deepEqual([failing.failures, failing.writes], [1, 1]);
  });

  test("an implementation late by N ticks reports the generation it saw N ticks ago", async () => {
    const live = snapshotWith();
    const reporter = new RouteStatusReporter({ writer: storingWriter(live, []), delayTicks: 2 });
    const route = live.httpRoutes?.[0];
    assert.ok(route?.metadata);
    const reported: (number | undefined)[] = [];
    for (let generation = 1; generation <= 5; generation++) {
      route.metadata.generation = generation;
      // What the watch hands this tick: the route as it is now (its status as last written).
      await reporter.tick({ ...live, httpRoutes: [structuredClone(route)] });
      reported.push(route.status?.parents?.[0]?.conditions?.[0]?.observedGeneration);
    }
    assert.deepEqual(reported, [1, 1, 1, 2, 3]);
  });

  test("canonicalJson ignores key order", () => {
    assert.equal(
      canonicalJson({ b: 1, a: { d: [1, { y: 1, x: 2 }], c: 2 } }),
      canonicalJson({ a: { c: 2, d: [1, { x: 2, y: 1 }] }, b: 1 }),
    );
  });
});

import assert from "node:assert/strict";
import { describe, test } from "node:test";
import type { ClusterSnapshot } from "./cluster-snapshot.js";
import {
  deploymentApp,
  gateway,
  gatewayApiApp,
  headerRule,
  pod,
  service,
  services,
  virtualServiceByHost,
} from "./fixtures.test-helpers.js";
import type { RouteParentStatusLike } from "./gateway-api-objects.js";
import { parseHeaderSpec } from "./request-headers.js";
import { totalBad, type SimulatorState } from "./ledger.js";
import { startSimulator } from "./simulator.js";

describe("startSimulator (with a static cluster)", () => {
  test("sends each app its rate, split by the VirtualService as it is now, and serves /state and /metrics", async () => {
    const cluster: ClusterSnapshot = deploymentApp(
      "web",
      "shop",
      [80, 20],
      [
        pod("web", "shop", "primary", "web-primary-1", "web:v1"),
        pod("web", "shop", "secondary", "web-secondary-1", "web:v3"),
      ],
    );
    const sim = await startSimulator({
      source: { snapshot: () => cluster },
      autoTick: false,
      rps: 40,
      tickMs: 250,
      seed: 5,
    });
    try {
      for (let i = 0; i < 400; i++) sim.tick(); // 100 s at 40 rps: 4000 requests

      const state = (await (await fetch(`${sim.url}/state`)).json()) as SimulatorState;
      assert.equal(state.ticks, 400);
      const [app] = state.apps;
      assert.ok(app);
      assert.deepEqual(app.weights, { primary: 80, secondary: 20 });
      assert.deepEqual(app.readyPods, { primary: ["web-primary-1"], secondary: ["web-secondary-1"] });
      assert.deepEqual(app.images, { primary: ["web:v1"], secondary: ["web:v3"] });
      assert.equal(app.sent.primary.total + app.sent.secondary.total, 4000);
      assert.ok(Math.abs(app.sent.secondary.total / 4000 - 0.2) < 0.02, `secondary ${app.sent.secondary.total}`);
      assert.deepEqual(Object.keys(app.sent.secondary.byCode), ["500"]);
      assert.deepEqual(Object.keys(app.sent.primary.byCode), ["200"]);

      // A wrong weight in the VirtualService shows up at once: the simulator reads, it does not assume.
      cluster.virtualServices = [virtualServiceByHost("web", "shop", [100, 0])];
      const before = app.sent.secondary.total;
      for (let i = 0; i < 40; i++) sim.tick();
      assert.equal(sim.state().apps[0]?.sent.secondary.total, before);

      // Each request is reported twice: by the caller's sidecar and by the pod's.
      const metrics = await (await fetch(`${sim.url}/metrics`)).text();
      const count = (reporter: string, code: string) =>
        metrics
          .split("\n")
          .filter(
            (l) =>
              l.startsWith("istio_requests_total{") &&
              l.includes(`reporter="${reporter}"`) &&
              l.includes(`response_code="${code}"`),
          )
          .reduce((sum, l) => sum + Number(l.split(" ").at(-1)), 0);
      for (const reporter of ["source", "destination"]) {
        assert.equal(count(reporter, "500"), before, reporter);
        assert.equal(count(reporter, "200"), 4400 - before, reporter);
      }
      assert.equal((await fetch(`${sim.url}/nope`)).status, 404);
      assert.equal(await (await fetch(`${sim.url}/healthz`)).text(), "ok\n");
    } finally {
      await sim.stop();
      await sim.stop();
    }
  });

  test("ticks on its own timer", async () => {
    const cluster: ClusterSnapshot = deploymentApp(
      "web",
      "shop",
      [100, 0],
      [pod("web", "shop", "primary", "p", "web:v1")],
    );
    const sim = await startSimulator({ source: { snapshot: () => cluster }, rps: 100, tickMs: 20 });
    try {
      // Ten ticks or more, however busy the machine: nothing here calls tick().
      const deadline = Date.now() + 10_000;
      let sent = 0;
      while (Date.now() < deadline && (sent = sim.state().apps[0]?.sent.primary.total ?? 0) < 10 * 2) {
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
      assert.ok(sent >= 10 * 2 && sent % 2 === 0, `sent ${sent} in ticks of 2`);
    } finally {
      await sim.stop();
    }
  });

  test("clients outside the mesh: a non-mesh client never reaches the secondary at weight 0", async () => {
    const secondaryPods = [pod("web", "shop", "secondary", "web-secondary-1", "web:v2")];
    const cluster: ClusterSnapshot = deploymentApp(
      "web",
      "shop",
      [100, 0],
      [pod("web", "shop", "primary", "web-primary-1", "web:v1"), ...secondaryPods],
    );
    const sim = await startSimulator({ source: { snapshot: () => cluster }, autoTick: false, outsideMeshRps: 40 });
    try {
      for (let i = 0; i < 100; i++) sim.tick();
      const app = sim.state().apps[0];
      assert.equal(app?.outsideMesh.primary.total, 1000);
      assert.equal(app.outsideMesh.secondary.total, 0);
      assert.equal(app.sent.secondary.total, 0);
      assert.deepEqual(totalBad(sim.state()), { noReadyPods: 0, reset: 0, replaced: 0, total: 0 });
      // Their requests are reported by the pods' sidecars alone, from an unknown source.
      const metrics = await (await fetch(`${sim.url}/metrics`)).text();
      const unknownSource = metrics
        .split("\n")
        .filter((l) => l.startsWith("istio_requests_total{") && l.includes('source_workload="unknown"'));
      assert.ok(unknownSource.every((l) => l.includes('reporter="destination"')));
      assert.equal(
        unknownSource.reduce((sum, l) => sum + Number(l.split(" ").at(-1)), 0),
        1000,
      );

      // The Service as it was before ADR 0010, selecting both tracks: the same callers reach the secondary.
      cluster.services = [service("web", "shop"), ...services("web", "shop").slice(1)];
      for (let i = 0; i < 100; i++) sim.tick();
      const after = sim.state().apps[0];
      assert.ok((after?.outsideMesh.secondary.total ?? 0) > 300, JSON.stringify(after?.outsideMesh));
      assert.equal(after?.sent.secondary.total, 0);
    } finally {
      await sim.stop();
    }
  });

  test("counts bad requests: a weight on a track with no Ready pod, and pods deleted before the proxies knew", async () => {
    const secondary = pod("web", "shop", "secondary", "web-secondary-1", "web:v2");
    const primary = pod("web", "shop", "primary", "web-primary-1", "web:v1");
    const cluster: ClusterSnapshot = deploymentApp("web", "shop", [50, 50], [primary, secondary]);
    // 4 ticks of lag: the proxies see the cluster as it was one second ago.
    const sim = await startSimulator({ source: { snapshot: () => cluster }, autoTick: false, propagationTicks: 4 });
    try {
      for (let i = 0; i < 20; i++) sim.tick();
      assert.deepEqual(totalBad(sim.state()), { noReadyPods: 0, reset: 0, replaced: 0, total: 0 });

      // Route back to the primary, and the secondary kept until the proxies have the route: nothing bad.
      cluster.virtualServices = [virtualServiceByHost("web", "shop", [100, 0])];
      for (let i = 0; i < 8; i++) sim.tick();
      cluster.pods = [primary];
      for (let i = 0; i < 8; i++) sim.tick();
      assert.deepEqual(totalBad(sim.state()), { noReadyPods: 0, reset: 0, replaced: 0, total: 0 });

      // The secondary deleted at the moment the route changes: the proxies still send it requests, reset.
      cluster.pods = [primary, secondary];
      cluster.virtualServices = [virtualServiceByHost("web", "shop", [50, 50])];
      for (let i = 0; i < 8; i++) sim.tick();
      cluster.virtualServices = [virtualServiceByHost("web", "shop", [100, 0])];
      cluster.pods = [primary];
      for (let i = 0; i < 8; i++) sim.tick();
      const afterReset = totalBad(sim.state());
      assert.ok(afterReset.reset > 0, JSON.stringify(afterReset));
      assert.equal(afterReset.noReadyPods, 0);
      assert.equal(afterReset.replaced, 0);

      // The primary's rolling update replaces its pod: told apart, not counted as bad.
      cluster.pods = [pod("web", "shop", "primary", "web-primary-2", "web:v2")];
      for (let i = 0; i < 8; i++) sim.tick();
      const afterReplace = totalBad(sim.state());
      assert.ok(afterReplace.replaced > 0, JSON.stringify(afterReplace));
      assert.equal(afterReplace.total, afterReset.total);

      // A weight on a track with no Ready pod at all.
      cluster.virtualServices = [virtualServiceByHost("web", "shop", [0, 100])];
      for (let i = 0; i < 8; i++) sim.tick();
      assert.ok(totalBad(sim.state()).noReadyPods > 0);
    } finally {
      await sim.stop();
    }
  });
});

describe("startSimulator with the Gateway API", () => {
  test("routes by the HTTPRoute, through its Gateway too, writes its status, and shows it all on /state", async () => {
    const cluster: ClusterSnapshot = {
      ...gatewayApiApp(
        "web",
        "shop",
        [100, 0],
        [
          pod("web", "shop", "primary", "web-primary-1", "web:v1"),
          pod("web", "shop", "secondary", "web-secondary-1", "web:v2"),
        ],
        { gateways: [{ namespace: "istio-system", name: "public" }], rules: [headerRule("web", "x-canary", "always")] },
      ),
      gateways: [gateway("public", "istio-system")],
    };
    const written: RouteParentStatusLike[][] = [];
    const sim = await startSimulator({
      source: { snapshot: () => cluster },
      autoTick: false,
      rps: 40,
      gatewayRps: 20,
      requestHeaders: [parseHeaderSpec("x-canary=always:0.5", "header")],
      routeStatus: {
        write: (_route, parents) => {
          written.push(parents);
          const route = cluster.httpRoutes?.[0];
          if (route) route.status = { parents };
          return Promise.resolve();
        },
      },
    });
    try {
      for (let i = 0; i < 40; i++) {
        sim.tick();
        await sim.statusWritten();
      }
      assert.equal(written.length, 1, "written once, nothing at rest");
      assert.deepEqual(
        written[0]?.map((p) => [p.parentRef?.kind, p.conditions?.map((c) => `${c.type}=${c.status}`).join(",")]),
        [
          ["Gateway", "Accepted=True,ResolvedRefs=True"],
          ["Service", "Accepted=True,ResolvedRefs=True"],
        ],
      );
      const state = (await (await fetch(`${sim.url}/state`)).json()) as SimulatorState;
      const [app] = state.apps;
      assert.ok(app);
      assert.deepEqual(
        [app.mesh?.kind, app.mesh?.objects, app.weights],
        ["HTTPRoute", ["shop/web"], { primary: 100, secondary: 0 }],
      );
      assert.deepEqual(
        app.mesh?.rules.map((r) => [r.name, r.matches]),
        [
          ["canary-by-header", ["path^/ x-canary=always port=80"]],
          ["primary-secondary", ["path^/ port=80"]],
        ],
      );
      assert.deepEqual(
        app.httpRoutes[0]?.parents.map((p) => [p.parent, p.listener ?? "", p.accepted]),
        [
          ["Service web:80", "", true],
          ["Gateway istio-system/public", "http", true],
        ],
      );
      // Half the requests carry the header: they go to the secondary, in the mesh and through the gateway.
      const share = (c: typeof app.sent) => c.secondary.total / (c.primary.total + c.secondary.total);
      assert.equal(app.sent.primary.total + app.sent.secondary.total, 400);
      assert.equal(app.throughGateways.primary.total + app.throughGateways.secondary.total, 200);
      assert.ok(
        Math.abs(share(app.sent) - 0.5) < 0.1 && Math.abs(share(app.throughGateways) - 0.5) < 0.12,
        JSON.stringify(app),
      );
      const metrics = await (await fetch(`${sim.url}/metrics`)).text();
      assert.match(
        metrics,
        /istio_requests_total\{reporter="source",source_workload="public-istio",source_workload_namespace="istio-system"/,
      );
    } finally {
      await sim.stop();
    }
  });

  test("without a status writer (a cluster that does not serve HTTPRoutes), nothing is written", async () => {
    const cluster = deploymentApp("web", "shop", [100, 0], [pod("web", "shop", "primary", "p", "web:v1")]);
    const sim = await startSimulator({ source: { snapshot: () => cluster }, autoTick: false });
    try {
      sim.tick();
      await sim.statusWritten();
      const app = sim.state().apps[0];
      assert.deepEqual(
        [app?.mesh?.kind, app?.httpRoutes, app?.throughGateways.primary.total],
        ["VirtualService", [], 0],
      );
    } finally {
      await sim.stop();
    }
  });
});

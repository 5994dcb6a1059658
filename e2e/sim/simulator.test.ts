import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { deployment, pod, virtualService } from "./fixtures.test-helpers.js";
import type { SimulatorState } from "./ledger.js";
import type { ClusterSnapshot } from "./mesh-view.js";
import { startSimulator } from "./simulator.js";

describe("startSimulator (with a static cluster)", () => {
  test("sends each app its rate, split by the VirtualService as it is now, and serves /state and /metrics", async () => {
    const cluster: ClusterSnapshot = {
      virtualServices: [virtualService("web", "shop", [80, 20])],
      deployments: [deployment("web", "shop", "primary"), deployment("web", "shop", "secondary")],
      pods: [
        pod("web", "shop", "primary", "web-primary-1", "web:v1"),
        pod("web", "shop", "secondary", "web-secondary-1", "web:v3"),
      ],
    };
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
      cluster.virtualServices = [virtualService("web", "shop", [100, 0])];
      const before = app.sent.secondary.total;
      for (let i = 0; i < 40; i++) sim.tick();
      assert.equal(sim.state().apps[0]?.sent.secondary.total, before);

      const metrics = await (await fetch(`${sim.url}/metrics`)).text();
      const count = (code: string) =>
        Number(
          metrics
            .split("\n")
            .find((l) => l.startsWith("istio_requests_total{") && l.includes(`response_code="${code}"`))
            ?.split(" ")
            .at(-1),
        );
      assert.equal(count("500"), before);
      assert.equal(count("200"), 4400 - before);
      assert.equal((await fetch(`${sim.url}/nope`)).status, 404);
      assert.equal(await (await fetch(`${sim.url}/healthz`)).text(), "ok\n");
    } finally {
      await sim.stop();
      await sim.stop();
    }
  });

  test("ticks on its own timer", async () => {
    const cluster: ClusterSnapshot = {
      virtualServices: [virtualService("web", "shop", [100, 0])],
      deployments: [],
      pods: [pod("web", "shop", "primary", "p", "web:v1")],
    };
    const sim = await startSimulator({ source: { snapshot: () => cluster }, rps: 100, tickMs: 20 });
    try {
      await new Promise((resolve) => setTimeout(resolve, 300));
      const sent = sim.state().apps[0]?.sent.primary.total ?? 0;
      assert.ok(sent >= 10 * 2 && sent % 2 === 0, `sent ${sent} in ticks of 2`);
    } finally {
      await sim.stop();
    }
  });
});

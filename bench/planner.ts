import { withDefaults } from "../src/api/defaults.js";
import type { CanaryApp } from "../src/api/types.js";
import { analysisDue, plan } from "../src/rollout/planner.js";
import type { Observation } from "../src/rollout/types.js";

/** Planner throughput: one plan (with its analysisDue check) per reconcile, over a test's whole life. */
export function benchPlanner(iterations = 200_000): { plansPerSecond: number; microsPerPlan: number } {
  const t0 = new Date("2026-01-01T00:00:00Z");
  const app: CanaryApp = {
    metadata: { name: "shop", namespace: "bench", uid: "u", generation: 2 },
    spec: { image: "example/shop:v2", imageListenPort: 8080, replicas: 3, testReplicas: 1 },
    status: { primaryImage: "example/shop:v1", phase: "Healthy" },
  };
  const spec = withDefaults(app.spec);
  const available = (image: string) => ({ image, replicas: 1, available: true, readyReplicas: 1 });
  // Walk the planner through a test by feeding each plan's status back, as the controller does.
  let current = structuredClone(app);
  let observed: Observation = {
    primary: available("example/shop:v1"),
    secondary: null,
    routedWeights: { primary: 100, secondary: 0 },
  };
  // The evidence of traffic, then the seed query: a step that passes.
  const PASSED = [
    { name: "secondary-traffic", kind: "traffic" as const, value: 100, passed: true, reason: "TrafficShown" },
    { name: "prometheusQuery", kind: "seed" as const, passed: true, reason: "NoFailingSeries" },
  ];
  const started = process.hrtime.bigint();
  for (let i = 0; i < iterations; i++) {
    const now = new Date(t0.getTime() + i * 1000);
    const due = analysisDue({ app: current, spec, observed, now });
    const result = plan({
      app: current,
      spec,
      observed: due ? { ...observed, analysis: PASSED } : observed,
      now,
    });
    current = { ...current, status: result.status };
    observed = {
      primary: available(result.primary.image),
      secondary: result.secondary ? available(result.secondary.image) : null,
      routedWeights: result.weights,
    };
    if (!result.status.canary && result.status.primaryImage === "example/shop:v2") {
      // Start the next test from the beginning.
      current = structuredClone(app);
      observed = {
        primary: available("example/shop:v1"),
        secondary: null,
        routedWeights: { primary: 100, secondary: 0 },
      };
    }
  }
  const seconds = Number(process.hrtime.bigint() - started) / 1e9;
  return { plansPerSecond: Math.round(iterations / seconds), microsPerPlan: (seconds / iterations) * 1e6 };
}

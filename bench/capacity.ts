import { summarize, type Summary } from "../test/support/rollout-recorder.js";
import { appSpec, changeImage, deployApp, image, startRolloutEnv, untilSettled } from "../test/support/rollout-env.js";
import type { Scaling } from "../src/api/types.js";

export interface CapacityLatency {
  rollouts: number;
  /** `spec.image` patch accepted → the route first gives the secondary weight, per mode. */
  patchToFirstWeightMs: Record<Scaling, Summary>;
  /** `spec.image` patch accepted → Healthy on the new image, per mode. */
  patchToHealthyMs: Record<Scaling, Summary>;
}

/**
 * Capacity follows weight against fixed: full promotions of a 10-replica app with steps 10, 30, 50 % in
 * each mode, on the local control plane (the Deployment controller played by the test support, so pods are
 * Available as soon as they are asked for). Needs KUBECONFIG set to a running control plane.
 */
export async function benchCapacity(rollouts = 3): Promise<CapacityLatency> {
  const env = await startRolloutEnv("bench-capacity");
  try {
    const first: Record<Scaling, number[]> = { fixed: [], weighted: [] };
    const healthy: Record<Scaling, number[]> = { fixed: [], weighted: [] };
    for (const scaling of ["fixed", "weighted"] as const) {
      const name = `capacity-${scaling}`;
      const recorder = await deployApp(
        env,
        name,
        appSpec(env, name, { stepWeights: [10, 30, 50] }, { replicas: 10, scaling }),
      );
      for (let i = 2; i <= rollouts + 1; i++) {
        const patched = await changeImage(env, name, image(name, `v${i}`));
        await untilSettled(recorder, "Healthy", patched);
        const weighted = recorder.weights.find((w) => w.at >= patched.at && (w.value?.secondary ?? 0) > 0);
        if (weighted !== undefined) first[scaling].push(weighted.at - patched.at);
        healthy[scaling].push(Date.now() - patched.at);
      }
    }
    return {
      rollouts,
      patchToFirstWeightMs: { fixed: summarize(first.fixed), weighted: summarize(first.weighted) },
      patchToHealthyMs: { fixed: summarize(healthy.fixed), weighted: summarize(healthy.weighted) },
    };
  } finally {
    await env.stop();
  }
}

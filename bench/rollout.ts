import { rolloutTimings, summarize, type Summary } from "../test/support/rollout-recorder.js";
import {
  INTERVAL_MS,
  appSpec,
  changeImage,
  deployApp,
  image,
  startRolloutEnv,
  untilSettled,
} from "../test/support/rollout-env.js";

export interface RolloutLatency {
  rollouts: number;
  /** `spec.image` patch accepted → secondary Deployment seen created. */
  patchToSecondaryMs: Summary;
  /** Per step: time between two weight changes minus the configured interval. */
  stepExtraMs: Summary;
  intervalMs: number;
}

/**
 * Reaction and step overhead on the local control plane: full promotions of v1 → v2 → v3 …, each timed by
 * watching the VirtualService and Deployments. Needs KUBECONFIG set to a running control plane.
 */
export async function benchRollout(rollouts = 5): Promise<RolloutLatency> {
  const env = await startRolloutEnv("bench-rollout");
  try {
    const name = "latency";
    const recorder = await deployApp(env, name, appSpec(env, name));
    const created: number[] = [];
    const steps: number[] = [];
    for (let i = 2; i <= rollouts + 1; i++) {
      const patched = await changeImage(env, name, image(name, `v${i}`));
      await untilSettled(recorder, "Healthy", patched);
      const timings = rolloutTimings(recorder, patched.at, INTERVAL_MS);
      if (timings.secondaryCreatedMs !== undefined) created.push(timings.secondaryCreatedMs);
      steps.push(...timings.stepExtraMs);
    }
    return {
      rollouts,
      patchToSecondaryMs: summarize(created),
      stepExtraMs: summarize(steps),
      intervalMs: INTERVAL_MS,
    };
  } finally {
    await env.stop();
  }
}

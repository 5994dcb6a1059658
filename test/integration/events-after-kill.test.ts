/**
 * A controller killed after the status write of a transition and before its Event: the next controller tells
 * the Event, exactly once (ADR 0001). The window is held open by the API server: a ValidatingAdmissionPolicy
 * refuses every Event about the app while the first controller promotes it; that controller is then
 * SIGKILLed, the policy removed, and a successor started.
 */
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import type { CoreV1Event } from "@kubernetes/client-node";
import { holdWrites, type Hold } from "../support/admission-hold.js";
import { eventually } from "../support/kube.js";
import { spawnController, type ControllerProcess } from "../support/process.js";
import {
  appEvents,
  appSpec,
  changeImage,
  deployApp,
  image,
  startRolloutEnv,
  untilSettled,
  type RolloutEnv,
} from "../support/rollout-env.js";
import type { RolloutRecorder } from "../support/rollout-recorder.js";

const HOLD_MESSAGE = "events held by the test";

describe("Events of a transition persisted by a controller killed before telling them", () => {
  const name = "told";
  const v2 = image(name, "v2");
  let env: RolloutEnv;
  let recorder: RolloutRecorder;
  const processes: ControllerProcess[] = [];
  let hold: Hold | undefined;

  const start = (generation: number): ControllerProcess => {
    const started = spawnController(
      [`--kubeconfig=${process.env["KUBECONFIG"]}`, `--namespaces=${env.namespace}`, "--leader-elect=false"],
      `${name}-controller-${generation}`,
    );
    processes.push(started);
    return started;
  };

  /** Makes the API server refuse every Event about the app, and waits until it does. */
  const holdEvents = async (): Promise<void> => {
    const probe: CoreV1Event = {
      metadata: { name: `${name}.probe`, namespace: env.namespace },
      involvedObject: { apiVersion: "canaryapp.io/v1alpha1", kind: "CanaryApp", name, namespace: env.namespace },
      reason: "Probe",
      message: "probe",
      type: "Normal",
    };
    hold = await holdWrites(env.kc, {
      name: `${env.namespace}-hold-events`,
      namespace: env.namespace,
      rule: { apiGroups: [""], apiVersions: ["v1"], operations: ["CREATE"], resources: ["events"] },
      expression: `object.involvedObject.name != '${name}'`,
      message: HOLD_MESSAGE,
      probe: () => env.core.createNamespacedEvent({ namespace: env.namespace, body: probe, dryRun: "All" }),
    });
  };
  const releaseEvents = async (): Promise<void> => {
    await hold?.release();
  };

  before(async () => {
    env = await startRolloutEnv("events-after-kill", { controller: false });
    start(1);
    recorder = await deployApp(env, name, appSpec(env, name, { stepWeight: 50, maxWeight: 50 }));
  });
  after(async () => {
    await releaseEvents();
    await Promise.all(processes.map((p) => p.kill("SIGKILL")));
    await env.stop();
  });

  test("the successor tells the Promoted Event, once", { timeout: 90_000 }, async () => {
    await holdEvents();
    const patched = await changeImage(env, name, v2);
    await untilSettled(recorder, "Healthy", patched);
    const [first] = processes;
    assert.equal(await first?.kill("SIGKILL"), null, "the first controller died of the signal");
    const promoted = async () =>
      (await appEvents(env, name)).filter((e) => e.reason === "Promoted" && e.message.includes(v2));
    assert.deepEqual(await promoted(), [], "the first controller could not tell it");

    await releaseEvents();
    start(2);
    await eventually("the Promoted Event", async () => ((await promoted()).length > 0 ? true : undefined), {
      timeoutMs: 30_000,
    });
    // Long enough for the successor to reconcile the app again (its status write, a requeue).
    await new Promise((resolve) => setTimeout(resolve, 4_000));
    const told = await promoted();
    assert.equal(told.length, 1, JSON.stringify(told));
    assert.equal(told[0]?.count, 1);
  });
});

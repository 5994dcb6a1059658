/**
 * A step decided (its status written) but never applied to the route, because the controller died in
 * between, and a successor that comes long after the step's interval: the step is taken on the route and
 * lasts its whole interval there, instead of being judged at once and skipped.
 *
 * The window between the two writes is held open by the API server itself: a ValidatingAdmissionPolicy
 * refuses every change of the app's VirtualService, so the controller's status write of the next step goes
 * through and its route apply does not; the controller is killed the moment the status names that step.
 */
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { CustomObjectsApi } from "@kubernetes/client-node";
import { childNames } from "../../src/api/meta.js";
import { ISTIO_NETWORKING } from "../../src/router/istio.js";
import { holdWrites, type Hold } from "../support/admission-hold.js";
import { MERGE_PATCH } from "../support/kube.js";
import { spawnController, type ControllerProcess } from "../support/process.js";
import {
  appSpec,
  changeImage,
  deployApp,
  image,
  INTERVAL_MS,
  startRolloutEnv,
  untilSettled,
  untilWeight,
  type RolloutEnv,
  PROMOTED_STEP_BY_STEP,
} from "../support/rollout-env.js";
import type { RolloutRecorder } from "../support/rollout-recorder.js";
import { auditTime, readAuditLog, replicaOf } from "../support/write-audit.js";

const HOLD_MESSAGE = "the test holds this route";
/** How much later than the step's interval the successor starts. */
const OUTAGE_MS = 3 * INTERVAL_MS;
/**
 * The recorder times each route change when its watch delivers it; two deliveries may be late by
 * different amounts, so a step is measured to within this when no audit log says when the route was written.
 */
const WATCH_JITTER_MS = 100;

/**
 * When the API server received each successful write of the VirtualService by a controller replica, in order,
 * from its audit log (the integration tests run with one: CANARYAPP_AUDIT_LOG); undefined without it. A step's
 * clock starts once the controller sees its route, after the write: the next step's write comes a whole
 * interval after this one, however late a watch delivers either to the test.
 */
async function routeWrites(namespace: string, route: string): Promise<number[] | undefined> {
  const path = process.env["CANARYAPP_AUDIT_LOG"];
  if (path === undefined) return undefined;
  const events = await readAuditLog(path, (line) => line.includes(namespace) && line.includes("virtualservices"));
  return events
    .filter(
      (e) =>
        e.objectRef?.resource === "virtualservices" &&
        e.objectRef.subresource === undefined &&
        e.objectRef.namespace === namespace &&
        e.objectRef.name === route &&
        ["create", "update", "patch"].includes(e.verb ?? "") &&
        (e.responseStatus?.code ?? 0) >= 200 &&
        (e.responseStatus?.code ?? 0) < 300 &&
        replicaOf(e.userAgent) !== undefined,
    )
    .map((e) => auditTime(e.requestReceivedTimestamp ?? ""))
    .sort((a, b) => a - b);
}

describe("rollout: a step's status written, its route never applied, the successor late", () => {
  const name = "patient";
  const v2 = image(name, "v2");
  let env: RolloutEnv;
  let recorder: RolloutRecorder;
  const processes: ControllerProcess[] = [];
  let hold: Hold | undefined;

  const start = (): ControllerProcess => {
    const started = spawnController(
      [`--kubeconfig=${process.env["KUBECONFIG"]}`, `--namespaces=${env.namespace}`, "--leader-elect=false"],
      `${name}-controller-${processes.length + 1}`,
    );
    processes.push(started);
    return started;
  };

  /** Makes the API server refuse every change of the app's VirtualService, and waits until it does. */
  const holdRoute = async (): Promise<void> => {
    hold = await holdWrites(env.kc, {
      name: `${env.namespace}-hold-route`,
      namespace: env.namespace,
      rule: {
        apiGroups: [ISTIO_NETWORKING.group],
        apiVersions: ["*"],
        operations: ["UPDATE"],
        resources: ["virtualservices"],
        resourceNames: [childNames(name).virtualService],
      },
      message: HOLD_MESSAGE,
      probe: () =>
        env.kc.makeApiClient(CustomObjectsApi).patchNamespacedCustomObject(
          {
            ...ISTIO_NETWORKING,
            plural: "virtualservices",
            namespace: env.namespace,
            name: childNames(name).virtualService,
            dryRun: "All",
            body: { metadata: { annotations: { "test.canaryapp.io/probe": String(Date.now()) } } },
          },
          MERGE_PATCH,
        ),
    });
  };
  const releaseRoute = async (): Promise<void> => {
    await hold?.release();
  };

  before(async () => {
    env = await startRolloutEnv("rollout-route-clock", { controller: false });
    start();
    recorder = await deployApp(env, name, appSpec(env, name));
  });
  after(async () => {
    await releaseRoute().catch(() => undefined);
    await Promise.all(processes.map((p) => p.kill("SIGTERM")));
    await env.stop();
  });

  test("the 30 % step reaches the route and lasts its interval there", { timeout: 90_000 }, async () => {
    const patched = await changeImage(env, name, v2);
    await untilWeight(recorder, 20);
    await holdRoute();
    // The next decision (30 %) is written to status; its apply is refused. Killed at once, the controller
    // has no time for another decision (that takes a whole interval).
    const decided = await recorder.until("the 30 % step decided", (r) =>
      r.app?.status?.canary?.step === 2 ? Date.now() : undefined,
    );
    const killed = processes.at(-1);
    assert.ok(killed !== undefined);
    assert.equal(await killed.kill("SIGKILL"), null, "the controller died of the signal");
    assert.deepEqual(recorder.currentWeights(), { primary: 80, secondary: 20 }, "the route still carries 20 %");
    await releaseRoute();
    const wait = decided + INTERVAL_MS + OUTAGE_MS - Date.now();
    await new Promise((resolve) => setTimeout(resolve, Math.max(0, wait)));
    console.log(`# ${name}: the successor starts ${Date.now() - decided} ms after the 30 % step was decided`);
    start();
    const status = await untilSettled(recorder, "Healthy", patched);

    assert.equal(status.primaryImage, v2);
    assert.deepEqual(recorder.weightPairs(patched.at), PROMOTED_STEP_BY_STEP);
    const steps = recorder.weights.filter((w) => w.at >= patched.at && w.value !== null);
    // Each route change the test saw is timed by the write that made it (the last write the API server received
    // before the test saw the change), when the audit log says; else by when the test saw it.
    const writes = await routeWrites(env.namespace, childNames(name).virtualService);
    const writtenAt = (seenAt: number): number => writes?.filter((t) => t <= seenAt).at(-1) ?? seenAt;
    const slack = writes === undefined ? WATCH_JITTER_MS : 0;
    // Every step, the last one too (its analysis, after a whole interval, began the promotion).
    const lasted = steps.slice(0, -1).map((w, i) => ({
      weight: w.value?.secondary,
      ms: Math.round(writtenAt(steps[i + 1]?.at ?? 0) - writtenAt(w.at)),
      seenMs: (steps[i + 1]?.at ?? 0) - w.at,
    }));
    console.log(
      `# ${name}: each step on the route (${writes === undefined ? "as the test saw it" : "from write to write, by the audit log; as the test saw it"}): ${lasted.map((s) => `${s.weight}% ${s.ms} ms${writes === undefined ? "" : ` (${s.seenMs})`}`).join(", ")}`,
    );
    for (const step of lasted) {
      assert.ok(
        step.ms >= INTERVAL_MS - slack,
        `${step.weight}% was on the route ${step.ms} ms, less than the ${INTERVAL_MS} ms interval`,
      );
    }
    assert.deepEqual(
      recorder.primary.filter((p) => p.at >= patched.at).map((p) => p.value),
      [v2],
      "the primary went from v1 to v2 once",
    );
  });
});

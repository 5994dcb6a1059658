/**
 * Webhook gates and notifications on the real API server with a real Prometheus, the controller in this
 * process, and a local receiver: the notices of a promoted and a rolled-back release arrive in order with
 * the reason and the value; a confirm-rollout gate holds the test before its secondary exists, and a
 * confirm-promotion gate holds it before promotion, until they answer 200; a failing
 * pre-rollout rolls back before any traffic; a controller SIGKILLed between a rollback and its notice
 * still delivers it, once per idempotency key.
 */
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { setTimeout as sleep } from "node:timers/promises";
import type { CanaryAppSpec } from "../../src/api/types.js";
import {
  ALLOWED_URLS_ANNOTATION,
  CREDENTIALS_LABEL,
  LEGACY_CREDENTIALS_LABEL,
} from "../../src/analysis/providers/credentials.js";
import { runController, type TestController } from "../support/controller.js";
import { TEST_METRICS } from "../support/exporter.js";
import { eventually } from "../support/kube.js";
import { spawnController, type ControllerProcess } from "../support/process.js";
import { startReceiver, type Receiver } from "../support/receiver.js";
import {
  appSpec,
  changeImage,
  deployApp,
  image,
  INTERVAL_MS,
  startRolloutEnv,
  untilSettled,
  type RolloutEnv,
} from "../support/rollout-env.js";

/**
 * A Secret holding a notification URL, labelled (by default canaryapp.io/credentials) so the controller's
 * cache holds it, and annotated with that URL as where it may be sent.
 */
async function notificationSecret(
  env: RolloutEnv,
  name: string,
  url: string,
  label: string = CREDENTIALS_LABEL,
): Promise<void> {
  await env.core.createNamespacedSecret({
    namespace: env.namespace,
    body: {
      metadata: { name, labels: { [label]: "true" }, annotations: { [ALLOWED_URLS_ANNOTATION]: url } },
      stringData: { url },
    },
  });
}

/**
 * The receiver listens on loopback over plain http: the operator lists it as a webhook destination and
 * allows the notification URLs (which are credentials) over http (tenant-destinations.test.ts shows the
 * defaults).
 */
const RECEIVER_FLAGS = ["--webhook-url-policy=127.0.0.1", "--allow-plain-http-credentials"];

describe("webhooks and notifications", () => {
  let env: RolloutEnv;
  let receiver: Receiver;
  let controller: TestController;

  before(async () => {
    env = await startRolloutEnv("hooks", { controller: false });
    controller = runController(env.namespace, RECEIVER_FLAGS);
    receiver = await startReceiver();
  });
  after(async () => {
    await controller.stop();
    await env.stop();
    await receiver.stop();
  });

  test(
    "the notices of a promoted and a rolled-back release, in order, with reason and value",
    { timeout: 90_000 },
    async () => {
      const name = "told";
      await notificationSecret(env, "told-hook", `${receiver.url}/notify/${name}`);
      const spec: CanaryAppSpec = {
        ...appSpec(env, name, {
          maxWeight: 20,
          webhooks: [{ name: "audit", type: "post-rollout", url: `${receiver.url}/post/${name}` }],
        }),
        notifications: [{ type: "generic", secretRef: { name: "told-hook" } }],
      };
      const recorder = await deployApp(env, name, spec);
      const promoted = await changeImage(env, name, image(name, "v2"));
      await untilSettled(recorder, "Healthy", promoted);
      env.exporter.set(TEST_METRICS.errors, name, 7);
      const failed = await changeImage(env, name, image(name, "v3"));
      await untilSettled(recorder, "Failed", failed);

      const notices = await eventually("four notices delivered", () => {
        const list = receiver.notices(`/notify/${name}`);
        return list.length >= 4 ? list : undefined;
      });
      assert.deepEqual(
        notices.map((n) => [n["event"], n["image"]]),
        [
          ["TestStarted", image(name, "v2")],
          ["Promoted", image(name, "v2")],
          ["TestStarted", image(name, "v3")],
          ["RolledBack", image(name, "v3")],
        ],
      );
      const rolledBack = notices[3] ?? {};
      assert.equal(rolledBack["app"], name);
      assert.equal(rolledBack["namespace"], env.namespace);
      assert.equal(rolledBack["reason"], "AnalysisFailed");
      assert.equal(rolledBack["metric"], "errors");
      assert.equal(rolledBack["value"], 7);
      assert.match(String(rolledBack["query"]), new RegExp(`${TEST_METRICS.errors}\\{app="${name}"\\}`));
      assert.match(String(rolledBack["message"]), /7 > 0/);
      assert.equal(rolledBack["primaryImage"], image(name, "v2"));
      const keys = notices.map((n) => n["idempotencyKey"]);
      assert.equal(new Set(keys).size, 4, "one key a notice");
      const status = await eventually("the outbox emptied", async () => {
        const app = await env.apps.get(name);
        return app.status?.notifications?.pending.length === 0 ? app.status : undefined;
      });
      assert.equal(status.notifications?.delivered, 4);
      // The post-rollout webhook was told how each test ended, through the same outbox.
      const told = receiver.notices(`/post/${name}`);
      assert.deepEqual(
        told.map((n) => [n["type"], n["event"], n["reason"] ?? null]),
        [
          ["post-rollout", "Promoted", null],
          ["post-rollout", "RolledBack", "AnalysisFailed"],
        ],
      );
    },
  );

  test("a confirm-promotion gate holds the test until the receiver answers 200", { timeout: 90_000 }, async () => {
    const name = "gated";
    let open = false;
    receiver.answer = (path) => (path === `/gate/${name}` ? (open ? 200 : 403) : 200);
    const spec = appSpec(env, name, {
      maxWeight: 20,
      webhooks: [
        {
          name: "change-board",
          type: "confirm-promotion",
          url: `${receiver.url}/gate/${name}`,
          metadata: { ticket: "CHG-42" },
        },
      ],
    });
    const recorder = await deployApp(env, name, spec);
    const v2 = image(name, "v2");
    const patched = await changeImage(env, name, v2);
    const held = await recorder.until("held at the gate", (r) =>
      r.app?.status?.conditions?.find((c) => c.type === "Progressing")?.reason === "WaitingForWebhook"
        ? r.app
        : undefined,
    );
    assert.equal(held.status?.canary?.stage, "AwaitingPromotion");
    assert.match(
      held.status?.conditions?.find((c) => c.type === "Progressing")?.message ?? "",
      /confirm-promotion webhook change-board: change-board answered 403/,
    );
    // Held for a few intervals: asked again, never promoted.
    await sleep(3 * INTERVAL_MS);
    const still = await env.apps.get(name);
    assert.equal(still.status?.canary?.stage, "AwaitingPromotion");
    assert.equal(still.status?.primaryImage, image(name, "v1"));
    const asked = receiver.received.filter((r) => r.path === `/gate/${name}`);
    assert.ok(asked.length >= 2, `asked again while held (${asked.length} calls)`);
    assert.deepEqual(asked[0]?.body["metadata"], { ticket: "CHG-42" });
    assert.equal(asked[0]?.body["type"], "confirm-promotion");
    assert.deepEqual(asked[0]?.body["images"], { primary: image(name, "v1"), secondary: v2 });

    open = true;
    const openedAt = Date.now();
    const status = await untilSettled(recorder, "Healthy", patched);
    assert.equal(status.primaryImage, v2);
    const promotedAt = recorder.primary.find((p) => p.value === v2)?.at ?? 0;
    assert.ok(promotedAt >= openedAt, "the primary got v2 only after the gate answered 200");
  });

  test("a confirm-rollout gate holds the test before the secondary exists", { timeout: 90_000 }, async () => {
    const name = "confirmed";
    let open = false;
    receiver.answer = (path) => (path === `/confirm/${name}` ? (open ? 200 : 503) : 200);
    const spec = appSpec(env, name, {
      maxWeight: 20,
      webhooks: [{ name: "approve", type: "confirm-rollout", url: `${receiver.url}/confirm/${name}` }],
    });
    const recorder = await deployApp(env, name, spec);
    const v2 = image(name, "v2");
    const patched = await changeImage(env, name, v2);
    const held = await recorder.until("held at confirm-rollout", (r) =>
      r.app?.status?.conditions?.find((c) => c.type === "Progressing")?.reason === "WaitingForWebhook"
        ? r.app
        : undefined,
    );
    assert.equal(held.status?.canary?.stage, "WaitingForSecondary");
    assert.match(
      held.status?.conditions?.find((c) => c.type === "Progressing")?.message ?? "",
      /confirm-rollout webhook approve: approve answered 503/,
    );
    // Held for a few intervals: asked again, and no secondary Deployment meanwhile.
    await sleep(3 * INTERVAL_MS);
    assert.ok(receiver.received.filter((r) => r.path === `/confirm/${name}`).length >= 2, "asked again while held");
    assert.deepEqual(
      recorder.secondary.filter((s) => s.at >= patched.at && s.value !== null),
      [],
      "no secondary Deployment while confirm-rollout answers 503",
    );

    open = true;
    const openedAt = Date.now();
    const status = await untilSettled(recorder, "Healthy", patched);
    assert.equal(status.primaryImage, v2);
    const created = recorder.secondary.find((s) => s.at >= patched.at && s.value === v2)?.at;
    assert.ok(
      created !== undefined && created >= openedAt,
      "the secondary appeared only after the receiver answered 200",
    );
  });

  test("a failing pre-rollout rolls back before any traffic", { timeout: 60_000 }, async () => {
    const name = "premature";
    receiver.answer = (path) => (path === `/pre/${name}` ? 500 : 200);
    const spec = appSpec(env, name, {
      webhooks: [{ name: "migrate", type: "pre-rollout", url: `${receiver.url}/pre/${name}` }],
    });
    const recorder = await deployApp(env, name, spec);
    const patched = await changeImage(env, name, image(name, "v2"));
    const status = await untilSettled(recorder, "Failed", patched);

    assert.deepEqual(recorder.weightPairs(patched.at), [[100, 0]], "the secondary never had traffic");
    const failed = status.failedImages?.[0];
    assert.equal(failed?.reason, "PreRolloutFailed");
    assert.equal(failed?.metric, "migrate");
    assert.equal(failed?.value, 500);
    assert.equal(receiver.received.filter((r) => r.path === `/pre/${name}`).length, 1, "pre-rollout is called once");
  });
});

describe("notifications across a controller killed before it could tell", () => {
  const name = "outlived";
  let env: RolloutEnv;
  let receiver: Receiver;
  const processes: ControllerProcess[] = [];
  const start = (generation: number): ControllerProcess => {
    const started = spawnController(
      [
        `--kubeconfig=${process.env["KUBECONFIG"]}`,
        `--namespaces=${env.namespace}`,
        "--leader-elect=false",
        ...RECEIVER_FLAGS,
      ],
      `${name}-controller-${generation}`,
    );
    processes.push(started);
    return started;
  };

  before(async () => {
    env = await startRolloutEnv("hooks-kill", { controller: false });
    receiver = await startReceiver();
  });
  after(async () => {
    await Promise.all(processes.map((p) => p.kill("SIGTERM")));
    await env.stop();
    await receiver.stop();
  });

  test(
    "the rollback decided and recorded, the controller killed, the next one delivers it once",
    { timeout: 90_000 },
    async () => {
      let refuseRollback = true;
      receiver.answer = (_path, body) => (body["event"] === "RolledBack" && refuseRollback ? 503 : 200);
      // The label's older name still works for notification URLs.
      await notificationSecret(env, "outlived-hook", `${receiver.url}/notify`, LEGACY_CREDENTIALS_LABEL);
      const first = start(1);
      const recorder = await deployApp(env, name, {
        ...appSpec(env, name, { maxWeight: 20 }),
        notifications: [{ type: "generic", secretRef: { name: "outlived-hook" } }],
      });
      env.exporter.set(TEST_METRICS.errors, name, 7);
      const v2 = image(name, "v2");
      const patched = await changeImage(env, name, v2);
      await untilSettled(recorder, "Failed", patched);
      // The rollback is over and on record, its notice in the outbox, refused by the receiver so far.
      const pending = await eventually("the RolledBack notice tried", async () => {
        const app = await env.apps.get(name);
        const tried = receiver.received.some((r) => r.body["event"] === "RolledBack");
        const box = app.status?.notifications;
        return tried && box?.pending.some((n) => n.event === "RolledBack") ? box : undefined;
      });
      const rolledBackKey = pending.pending.find((n) => n.event === "RolledBack")?.idempotencyKey;
      assert.ok(rolledBackKey !== undefined);
      assert.equal(receiver.notices().filter((n) => n["event"] === "RolledBack").length, 0, "not delivered yet");
      assert.equal(await first.kill("SIGKILL"), null, "the controller died of the signal");

      refuseRollback = false;
      start(2);
      const delivered = await eventually(
        "the RolledBack notice delivered by the next controller",
        () => {
          const list = receiver.notices();
          return list.some((n) => n["event"] === "RolledBack") ? list : undefined;
        },
        { timeoutMs: 60_000 },
      );
      const status = await eventually("the outbox emptied", async () => {
        const app = await env.apps.get(name);
        return app.status?.notifications?.pending.length === 0 ? app.status : undefined;
      });
      assert.deepEqual(
        delivered.map((n) => [n["event"], n["image"]]),
        [
          ["TestStarted", v2],
          ["RolledBack", v2],
        ],
      );
      const rolledBack = delivered[1] ?? {};
      assert.equal(rolledBack["idempotencyKey"], rolledBackKey, "the same key the first controller tried");
      assert.equal(rolledBack["reason"], "AnalysisFailed");
      assert.equal(rolledBack["value"], 7);
      const accepted = receiver.received.filter((r) => r.status === 200).map((r) => r.body["idempotencyKey"]);
      assert.equal(new Set(accepted).size, 2, "two distinct keys accepted");
      assert.equal(status.notifications?.delivered, status.notifications?.seq);
      console.log(
        `# ${name}: ${receiver.received.length} POSTs for ${new Set(accepted).size} notices (${accepted.length} accepted copies)`,
      );
    },
  );
});

/**
 * A restart costs nothing: a controller that starts over children it already made (listed, so built-in kinds
 * arrive without apiVersion/kind, and with quantities in the API server's canonical form) writes nothing and
 * records no Event. Also: a spec whose quantities the API server rewrites (`cpu: 1`, "0.5", "1024Mi") is
 * applied once, not on every reconcile.
 */
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import type { CanaryApp } from "../../src/api/types.js";
import { SEED_SPEC } from "../../src/resources/fixtures.test-helpers.js";
import { runController, type TestController } from "../support/controller.js";
import { canaryApps, createTestNamespace, eventually, testKubeConfig } from "../support/kube.js";

const APPS = 10;

/** Quantities the API server stores in another form than the one written. */
const POD_WITH_QUANTITIES: CanaryApp["spec"]["pod"] = {
  resources: { requests: { cpu: "0.5", memory: "1024Mi" }, limits: { cpu: 1, memory: "1.5Gi" } },
};

async function quiet(controller: TestController, forMs: number, timeoutMs = 60_000): Promise<void> {
  await eventually(
    `no writes for ${forMs} ms`,
    () => {
      const last = controller.observer.writes.at(-1)?.at;
      return Promise.resolve(last !== undefined && Date.now() - last >= forMs ? true : undefined);
    },
    { timeoutMs },
  );
}

describe("a restarted controller", () => {
  const kc = testKubeConfig();
  let namespace = "";
  let controllers: TestController[] = [];

  before(async () => {
    namespace = await createTestNamespace(kc, "restart");
    const apps = canaryApps(kc, namespace);
    for (let i = 0; i < APPS; i++) {
      const spec = i % 2 === 0 ? SEED_SPEC : { ...SEED_SPEC, pod: POD_WITH_QUANTITIES };
      await apps.create({ metadata: { name: `app-${i}` }, spec });
    }
  });
  after(async () => {
    for (const c of controllers) await c.stop();
  });

  test("converges once, and a spec with rewritten quantities is not re-applied at every reconcile", async () => {
    const first = runController(namespace);
    controllers.push(first);
    await quiet(first, 3_000);
    const applies = first.observer.writes.filter((w) => w.verb === "apply");
    // Six children per app (the Deployment, DestinationRule, VirtualService, and three Services since ADR
    // 0010), each applied once.
    assert.equal(applies.length, APPS * 6, applies.map((w) => `${w.verb} ${w.kind}`).join(", "));
    await first.stop();
    controllers = [];
  });

  test("over unchanged children makes no write and records no Event", async () => {
    const second = runController(namespace);
    controllers.push(second);
    await eventually(
      `all ${APPS} apps reconciled`,
      () => {
        const seen = new Set(second.observer.statuses.map((s) => s.app));
        return Promise.resolve(seen.size === APPS ? true : undefined);
      },
      { timeoutMs: 30_000 },
    );
    // The statuses are unchanged too, so the second controller may write nothing at all: wait a while instead.
    await new Promise((resolve) => setTimeout(resolve, 3_000));
    const writes = second.observer.writes.map((w) => `${w.verb} ${w.kind}`);
    console.log(`# warm restart over ${APPS} apps: ${writes.length} writes, ${second.observer.events.length} Events`);
    assert.deepEqual(writes, []);
    assert.deepEqual(
      second.observer.events.map((e) => `${e.reason}: ${e.message}`),
      [],
    );
  });
});

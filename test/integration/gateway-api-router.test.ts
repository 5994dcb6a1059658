/**
 * `spec.mesh: gateway-api` on the real API server (with the Gateway API's CRDs, their schema and CEL rules):
 * the controller owns one HTTPRoute whose parent is the app's Service and whose backends are the per-track
 * Services; a step counts as routed only once the route's implementation reports it accepted for the current
 * generation (here a stand-in that writes `status.parents`, test/support/route-implementation.ts); a route a
 * parent does not accept holds the step and ends the test RouteRefused at the progress deadline, with the
 * implementation's reason. On a cluster without the Gateway API, the app is Invalid with RouterUnavailable.
 */
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { CustomObjectsApi } from "@kubernetes/client-node";
import { startControlPlane, type ControlPlane } from "../../e2e/cluster/index.js";
import type { CanaryApp } from "../../src/api/types.js";
import { loadKubeConfig } from "../../src/kube/client.js";
import { SEED_SPEC } from "../../src/resources/fixtures.test-helpers.js";
import { GATEWAY_API } from "../../src/router/gateway-api.js";
import { ISTIO_NETWORKING } from "../../src/router/istio.js";
import { runController } from "../support/controller.js";
import { canaryApps, createTestNamespace, eventually } from "../support/kube.js";
import { startRouteImplementation, type RouteImplementation, type RouteLike } from "../support/route-implementation.js";
import { TEST_METRICS } from "../support/exporter.js";
import { appSpec, image, SEED_QUERY, startRolloutEnv, type RolloutEnv } from "../support/rollout-env.js";

const ROUTES = { group: GATEWAY_API.group, version: GATEWAY_API.version, plural: "httproutes" } as const;

describe("the gateway-api router", () => {
  let env: RolloutEnv;
  let implementation: RouteImplementation | undefined;
  /** Routes whose canary weight above this the stand-in's Gateway does not accept, by route name. */
  const refuseAbove = new Map<string, number>();

  before(async () => {
    env = await startRolloutEnv("gateway-api");
  });
  after(async () => {
    implementation?.stop();
    await env.stop();
  });

  const custom = () => env.kc.makeApiClient(CustomObjectsApi);
  const route = (name: string) =>
    custom()
      .getNamespacedCustomObject({ ...ROUTES, namespace: env.namespace, name })
      .then((r) => r as RouteLike & { spec: Record<string, unknown> })
      .catch(() => undefined);
  const status = async (name: string) => (await env.apps.get(name)).status;

  async function deploy(name: string, extra: Partial<CanaryApp["spec"]> = {}): Promise<void> {
    env.exporter.set(TEST_METRICS.errors, name, 0);
    env.exporter.set(TEST_METRICS.latency, name, 120);
    env.exporter.set(TEST_METRICS.requests, name, 1000);
    const spec = appSpec(env, name, { metrics: [] }, { prometheusQuery: SEED_QUERY, mesh: "gateway-api", ...extra });
    await env.apps.create({ metadata: { name }, spec });
    await eventually(`${name} Healthy`, async () => ((await status(name))?.phase === "Healthy" ? true : undefined), {
      timeoutMs: 30_000,
    });
  }

  test("an HTTPRoute the API server takes: the app's Service its parent, both tracks' Services weighted; no VirtualService", async () => {
    const name = "routed";
    await deploy(name);
    const written = await eventually("the HTTPRoute", () => route(name));
    assert.deepEqual(written.spec["parentRefs"], [{ group: "", kind: "Service", name, port: 80 }]);
    assert.deepEqual(written.spec["rules"], [
      {
        name: "primary-secondary",
        backendRefs: [
          { group: "", kind: "Service", name: `${name}-primary`, port: 80, weight: 100 },
          { group: "", kind: "Service", name: `${name}-secondary`, port: 80, weight: 0 },
        ],
        // The API server's default for a rule without matches.
        matches: [{ path: { type: "PathPrefix", value: "/" } }],
      },
    ]);
    const vs: unknown = await custom()
      .getNamespacedCustomObject({ ...ISTIO_NETWORKING, plural: "virtualservices", namespace: env.namespace, name })
      .catch(() => undefined);
    assert.equal(vs, undefined, "the VirtualService is Istio's router's, not this one's");
  });

  test("a step waits until the implementation reports the route accepted; then the test steps and promotes", async () => {
    const name = "accepted";
    await deploy(name);
    const v2 = image(name, "v2");
    await env.apps.patchSpec(name, { image: v2 });
    const held = await eventually(
      "the first step held for the implementation",
      async () => {
        const s = await status(name);
        return s?.canary?.step === 0 && /waits for the route's implementation/.test(s.message ?? "") ? s : undefined;
      },
      { timeoutMs: 30_000 },
    );
    assert.match(
      held.message ?? "",
      /RouteNotReported: HTTPRoute accepted: no implementation has reported on parent Service accepted/,
    );
    assert.equal(held.canary?.stepRoutedAt, undefined, "not routed: its clock has not started");

    implementation ??= await startRouteImplementation(env.kc, env.namespace, (r) => {
      const limit = refuseAbove.get(r.metadata.name);
      const secondary = r.spec?.rules?.find((rule) => rule.name === "primary-secondary")?.backendRefs?.[1]?.weight ?? 0;
      return limit !== undefined && secondary > limit
        ? {
            accepted: false,
            reason: "NotAllowedByListeners",
            message: `no listener admits a canary weight above ${limit}`,
          }
        : { accepted: true };
    });
    const done = await eventually(
      `${v2} promoted`,
      async () => {
        const s = await status(name);
        return s?.phase === "Healthy" && s.primaryImage === v2 && s.canary === undefined ? s : undefined;
      },
      { timeoutMs: 60_000 },
    );
    assert.deepEqual(done.weights, { primary: 100, secondary: 0 });
    const weights = implementation.reported
      .filter((r) => r.verdict.accepted && r.route === name)
      .sort((a, b) => a.generation - b.generation)
      .map((r) => r.secondary);
    const stepped = weights.filter((w, i) => w !== weights[i - 1]);
    // The implementation started while step 1 (10 %) waited for it: every generation from then on, accepted.
    assert.deepEqual(stepped, [10, 20, 30, 40, 50, 0], `the accepted generations: ${weights.join(", ")}`);
  });

  test("a parent that does not accept the route holds the step, then ends the test RouteRefused with its reason", async () => {
    const name = "refused";
    refuseAbove.set(name, 10);
    await deploy(name, { analysis: { ...appSpec(env, name).analysis, progressDeadlineSeconds: 10 } });
    assert.ok(implementation !== undefined, "started by the test before");
    const v2 = image(name, "v2");
    await env.apps.patchSpec(name, { image: v2 });
    const failed = await eventually(
      `${v2} rolled back`,
      async () => {
        const s = await status(name);
        return s?.phase === "Failed" && s.canary === undefined ? s : undefined;
      },
      { timeoutMs: 60_000 },
    );
    const record = failed.failedImages?.find((f) => f.image === v2);
    assert.equal(record?.reason, "RouteRefused");
    assert.match(
      record?.message ?? "",
      /^the route has not carried the weight of step 2 of 5 for 10s; its implementation does not carry it: RouteNotAccepted: HTTPRoute refused: parent Service refused: Accepted False \(NotAllowedByListeners: no listener admits a canary weight above 10\)$/,
    );
    const last = await route(name);
    const backends = (last?.spec["rules"] as { backendRefs: { weight: number }[] }[])[0]?.backendRefs;
    assert.deepEqual(
      backends?.map((b) => b.weight),
      [100, 0],
      "the rollback's route, accepted",
    );
  });
});

describe("the gateway-api router on a cluster without the Gateway API", () => {
  let cp: ControlPlane | undefined;
  after(async () => cp?.stop());

  test("the app is Invalid, RouterUnavailable, naming what to install; nothing of it is written", async () => {
    cp = await startControlPlane({ profile: "api", handleSignals: false });
    const kc = loadKubeConfig(cp.kubeconfigPath);
    const namespace = await createTestNamespace(kc, "no-gateway-api");
    const controller = runController(namespace, [], { KUBECONFIG: cp.kubeconfigPath });
    try {
      const apps = canaryApps(kc, namespace);
      await apps.create({ metadata: { name: "web" }, spec: { ...SEED_SPEC, mesh: "gateway-api" } });
      const invalid = await eventually(
        "web Invalid",
        async () => {
          const s = (await apps.get("web")).status;
          return s?.phase === "Invalid" ? s : undefined;
        },
        { timeoutMs: 30_000 },
      );
      const condition = invalid.conditions?.find((c) => c.type === "InvalidSpec");
      assert.equal(condition?.reason, "RouterUnavailable");
      assert.match(
        condition?.message ?? "",
        /spec\.mesh: gateway-api routes with HTTPRoutes, which this cluster's API server does not serve; install their CRDs \(the Gateway API's standard channel\) and restart the controller/,
      );
      const { AppsV1Api } = await import("@kubernetes/client-node");
      const deployments = await kc.makeApiClient(AppsV1Api).listNamespacedDeployment({ namespace });
      assert.equal(deployments.items.length, 0, "nothing of the app is written");
    } finally {
      await controller.stop();
    }
  });
});

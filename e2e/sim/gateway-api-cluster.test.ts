/**
 * The simulator as the Gateway API implementation against a real API server with the Gateway API CRDs
 * (`with-cluster --gateway-api`): it finds the kinds served, watches HTTPRoutes and a Gateway in another
 * namespace, writes `status.parents` through the status subresource as Istio would (the CRD's schema
 * validates every write), follows the route's changes, and writes nothing at rest. Runs only against a
 * cluster (`make test-e2e`, or `node dist/e2e/cluster/with-cluster.js --profile api --gateway-api -- node
 * --test dist/e2e/sim/gateway-api-cluster.test.js`); skipped elsewhere.
 */
import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import { after, before, describe, test } from "node:test";
import { setTimeout as sleep } from "node:timers/promises";
import { CoreV1Api, CustomObjectsApi } from "@kubernetes/client-node";
import { pino } from "pino";
import { testKubeConfig } from "../../test/support/kube.js";
import type { HTTPRouteLike, RouteParentStatusLike } from "./gateway-api-objects.js";
import { gateway, httpRoute } from "./fixtures.test-helpers.js";
import type { SimulatorState } from "./ledger.js";
import { servedKinds } from "./served-kinds.js";
import { startSimulator, type Simulator } from "./simulator.js";
import { waitFor } from "../cluster/wait.js";

const onCluster = process.env["CANARYAPP_TEST_PROFILE"] !== undefined;
const suffix = randomBytes(3).toString("hex");
const namespace = `gwsim-${suffix}`;
const gatewayNamespace = `gwsim-gw-${suffix}`;
const group = "gateway.networking.k8s.io";
const routes = { group, version: "v1", plural: "httproutes", namespace } as const;

/** Polls `probe` until it has a value (errors count as "not yet"); the shared wait of the test clusters. */
const eventually = <T>(what: string, probe: () => Promise<T | undefined>, timeoutMs = 30_000): Promise<T> =>
  waitFor(what, probe, { timeoutMs, intervalMs: 200 });

describe("the simulator as the Gateway API implementation, on a cluster", { skip: !onCluster && "no cluster" }, () => {
  const kc = onCluster ? testKubeConfig() : undefined;
  const core = kc?.makeApiClient(CoreV1Api);
  const custom = kc?.makeApiClient(CustomObjectsApi);
  let simulator: Simulator | undefined;

  const getRoute = async () => (await custom?.getNamespacedCustomObject({ ...routes, name: "web" })) as HTTPRouteLike;
  /** `kind name: Accepted=…/reason ResolvedRefs=…/reason @generation` for each status entry. */
  const statusOf = (route: HTTPRouteLike) =>
    (route.status?.parents ?? []).map(
      (p: RouteParentStatusLike) =>
        `${p.parentRef?.kind ?? "Gateway"} ${p.parentRef?.name}: ${(p.conditions ?? [])
          .map((c) => `${c.type}=${c.status}/${c.reason} @${c.observedGeneration}`)
          .join(" ")} [${p.controllerName}]`,
    );
  const createService = (name: string) =>
    core?.createNamespacedService({
      namespace,
      body: {
        metadata: { name, namespace },
        spec: { selector: { "canaryapp.io/app": "web", run: name }, ports: [{ name: "http", port: 80 }] },
      },
    });

  before(async () => {
    assert.ok(core && custom && kc);
    for (const ns of [namespace, gatewayNamespace]) await core.createNamespace({ body: { metadata: { name: ns } } });
    await createService("web");
    await createService("web-primary");
    // The Gateway admits routes of its own namespace only (allowedRoutes defaults to Same).
    const gw = gateway("public", gatewayNamespace, [{ name: "http", port: 80, protocol: "HTTP" }]);
    await custom.createNamespacedCustomObject({
      group,
      version: "v1",
      plural: "gateways",
      namespace: gatewayNamespace,
      body: { apiVersion: `${group}/v1`, kind: "Gateway", ...gw },
    });
    const route = httpRoute("web", namespace, [90, 10], {
      gateways: [{ namespace: gatewayNamespace, name: "public" }],
    });
    const { generation: _generation, ...metadata } = route.metadata ?? {};
    await custom.createNamespacedCustomObject({
      ...routes,
      body: { apiVersion: `${group}/v1`, kind: "HTTPRoute", ...route, metadata },
    });
    simulator = await startSimulator({
      kubeconfig: kc,
      namespaces: [namespace],
      gatewayNamespaces: [gatewayNamespace],
      tickMs: 100,
      log: pino({ level: "warn" }),
    });
  });

  after(async () => {
    await simulator?.stop();
    for (const ns of [namespace, gatewayNamespace]) await core?.deleteNamespace({ name: ns }).catch(() => undefined);
  });

  test("a kind the API server does not serve is found not served", async () => {
    assert.ok(custom);
    const served = await servedKinds(
      (type) => custom.listClusterCustomObject({ ...type, limit: 1 }),
      [
        { group, version: "v1", plural: "httproutes" },
        { group, version: "v1", plural: "nosuchroutes" },
      ],
      undefined,
      pino({ level: "silent" }),
    );
    assert.deepEqual([...served], ["httproutes"]);
  });

  test("writes each parent's status as Istio would, and follows the route's fixes", { timeout: 120_000 }, async () => {
    // The secondary's Service is missing and the Gateway refuses the route's namespace.
    const first = await eventually("status written", async () => {
      const route = await getRoute();
      return (route.status?.parents?.length ?? 0) === 2 ? route : undefined;
    });
    const generation = first.metadata?.generation;
    assert.deepEqual(statusOf(first), [
      `Gateway public: Accepted=False/NotAllowedByListeners @${generation} ResolvedRefs=False/BackendNotFound @${generation} [istio.io/gateway-controller]`,
      `Service web: Accepted=True/Accepted @${generation} ResolvedRefs=False/BackendNotFound @${generation} [istio.io/gateway-controller]`,
    ]);
    const resolved = first.status?.parents?.[1]?.conditions?.find((c) => c.type === "ResolvedRefs");
    assert.equal(resolved?.message, `backend(web-secondary.${namespace}.svc.cluster.local) not found`);

    // Nothing is written at rest.
    const resourceVersion = first.metadata?.resourceVersion;
    await sleep(1500);
    assert.equal((await getRoute()).metadata?.resourceVersion, resourceVersion);

    // The missing Service appears: ResolvedRefs turns True on both parents, same generation.
    await createService("web-secondary");
    await eventually("references resolved", async () => {
      const route = await getRoute();
      return statusOf(route).every((s) => s.includes("ResolvedRefs=True/ResolvedRefs")) ? route : undefined;
    });

    // The Gateway admits all namespaces: it takes the route.
    assert.ok(custom);
    await custom.patchNamespacedCustomObject({
      group,
      version: "v1",
      plural: "gateways",
      namespace: gatewayNamespace,
      name: "public",
      body: [
        {
          op: "replace",
          path: "/spec/listeners/0/allowedRoutes",
          value: { namespaces: { from: "All" }, kinds: [{ group, kind: "HTTPRoute" }] },
        },
      ],
    });
    await eventually("accepted by the Gateway", async () => {
      const route = await getRoute();
      return statusOf(route)[0]?.includes("Accepted=True/Accepted") ? route : undefined;
    });

    // A new generation of the route is reported at that generation.
    const route = await getRoute();
    const spec = route.spec;
    assert.ok(spec?.rules?.[0]?.backendRefs);
    spec.rules[0].backendRefs = spec.rules[0].backendRefs.map((b) => ({
      ...b,
      weight: b.name === "web-primary" ? 50 : 50,
    }));
    await custom.replaceNamespacedCustomObject({ ...routes, name: "web", body: route });
    const bumped = await eventually("the new generation reported", async () => {
      const r = await getRoute();
      const g = r.metadata?.generation;
      return r.status?.parents?.every((p) => p.conditions?.every((c) => c.observedGeneration === g)) ? r : undefined;
    });
    assert.equal(bumped.metadata?.generation, (generation ?? 0) + 1);

    const state = (await (await fetch(`${simulator?.url}/state`)).json()) as SimulatorState;
    const app = state.apps.find((a) => a.namespace === namespace && a.name === "web");
    assert.deepEqual([app?.mesh?.kind, app?.weights], ["HTTPRoute", { primary: 50, secondary: 50 }]);
    assert.deepEqual(
      app?.httpRoutes[0]?.parents.map((p) => [p.parent, p.accepted]),
      [
        ["Service web:80", true],
        [`Gateway ${gatewayNamespace}/public`, true],
      ],
    );
  });
});

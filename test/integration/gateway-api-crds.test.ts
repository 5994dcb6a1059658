/**
 * The Gateway API on the local control plane: a cluster started with it (`gatewayApi: true`, `with-cluster
 * --gateway-api`) serves gateway.networking.k8s.io/v1 HTTPRoutes and Gateways with their schemas, defaults and CEL
 * rules intact; one started without serves no such group, so the clusters that do not ask start as fast as before.
 * It runs two control planes of its own (api profile), so it does not depend on how the suite's cluster was started.
 */
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { mkdtemp, rm, symlink } from "node:fs/promises";
import { tmpdir } from "node:os";
import { basename, dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { after, before, describe, test } from "node:test";
import { ApiException, ApiextensionsV1Api, CoreV1Api, CustomObjectsApi } from "@kubernetes/client-node";
import { GATEWAY_API_CRD_NAMES, startControlPlane, type ControlPlane } from "../../e2e/cluster/index.js";
import { resolveToolchain } from "../../e2e/cluster/toolchain.js";
import { loadKubeConfig } from "../../src/kube/client.js";

const GROUP = "gateway.networking.k8s.io";
const namespace = "shop";
const httpRoutes = { group: GROUP, version: "v1", plural: "httproutes", namespace } as const;
const gateways = { group: GROUP, version: "v1", plural: "gateways", namespace } as const;

/** The shape the gateway-api router writes: a mesh route on the app's Service, split between two backends. */
function httpRoute(name: string, backendRefs: object[]): object {
  return {
    apiVersion: `${GROUP}/v1`,
    kind: "HTTPRoute",
    metadata: { name, namespace },
    spec: {
      parentRefs: [{ group: "", kind: "Service", name: "shop", port: 80 }],
      rules: [{ backendRefs }],
    },
  };
}

const weighted = [
  { name: "shop-primary", port: 80, weight: 90 },
  { name: "shop-canary", port: 80, weight: 10 },
];

interface RouteBack {
  metadata: { uid?: string };
  spec: {
    parentRefs: { group: string; kind: string; name: string }[];
    rules: { backendRefs: { group: string; kind: string; name: string; weight: number }[]; matches: unknown[] }[];
  };
}

/** The HTTP status of a rejected request (an ApiException's code). */
function statusOf(err: unknown): number | undefined {
  return err instanceof ApiException ? err.code : undefined;
}

/** Runs with-cluster and collects its exit code and stderr. */
function withCluster(args: string[], env: NodeJS.ProcessEnv): Promise<{ code: number | null; stderr: string }> {
  const cli = join(dirname(fileURLToPath(import.meta.url)), "..", "..", "e2e", "cluster", "with-cluster.js");
  const child = spawn(process.execPath, [cli, ...args], { env, stdio: ["ignore", "ignore", "pipe"] });
  let stderr = "";
  child.stderr.on("data", (chunk: Buffer) => (stderr += chunk.toString("utf8")));
  return new Promise((resolve) => child.once("exit", (code) => resolve({ code, stderr })));
}

describe("Gateway API CRDs on the local control plane", () => {
  let withGatewayApi: ControlPlane;
  let without: ControlPlane;

  before(async () => {
    [withGatewayApi, without] = await Promise.all([
      startControlPlane({ profile: "api", gatewayApi: true, handleSignals: false }),
      startControlPlane({ profile: "api", handleSignals: false }),
    ]);
    console.log(`# startup: ${withGatewayApi.startupMs} ms with the Gateway API, ${without.startupMs} ms without`);
    for (const cp of [withGatewayApi, without]) {
      const core = loadKubeConfig(cp.kubeconfigPath).makeApiClient(CoreV1Api);
      await core.createNamespace({ body: { metadata: { name: namespace } } });
    }
  });
  after(async () => {
    await Promise.all([withGatewayApi?.stop(), without?.stop()]);
  });

  test("started with it: the four CRDs are Established, and only those of the group", async () => {
    const ext = loadKubeConfig(withGatewayApi.kubeconfigPath).makeApiClient(ApiextensionsV1Api);
    const crds = (await ext.listCustomResourceDefinition()).items.filter((c) => c.spec.group === GROUP);
    assert.deepEqual(crds.map((c) => c.metadata?.name).sort(), [...GATEWAY_API_CRD_NAMES].sort());
    for (const crd of crds) {
      const established = crd.status?.conditions?.find((c) => c.type === "Established");
      assert.equal(established?.status, "True", `${crd.metadata?.name} is Established`);
    }
  });

  test("an HTTPRoute on a Service with two weighted backends, and a Gateway, read back", async () => {
    const custom = loadKubeConfig(withGatewayApi.kubeconfigPath).makeApiClient(CustomObjectsApi);
    await custom.createNamespacedCustomObject({ ...httpRoutes, body: httpRoute("shop", weighted) });
    const got = (await custom.getNamespacedCustomObject({ ...httpRoutes, name: "shop" })) as RouteBack;
    assert.ok(got.metadata.uid, "stored");
    assert.deepEqual(got.spec.parentRefs[0], { group: "", kind: "Service", name: "shop", port: 80 });
    const rule = got.spec.rules[0];
    assert.deepEqual(
      rule?.backendRefs.map((b) => [b.name, b.weight, b.kind]),
      [
        ["shop-primary", 90, "Service"],
        ["shop-canary", 10, "Service"],
      ],
      "the weights, and the kind the schema defaults",
    );
    assert.deepEqual(rule?.matches, [{ path: { type: "PathPrefix", value: "/" } }], "the schema's default match");

    const gateway = {
      apiVersion: `${GROUP}/v1`,
      kind: "Gateway",
      metadata: { name: "edge", namespace },
      spec: { gatewayClassName: "istio", listeners: [{ name: "http", port: 80, protocol: "HTTP" }] },
    };
    await custom.createNamespacedCustomObject({ ...gateways, body: gateway });
    const gotGateway = (await custom.getNamespacedCustomObject({ ...gateways, name: "edge" })) as {
      spec: { gatewayClassName: string; listeners: { name: string; port: number }[] };
    };
    assert.equal(gotGateway.spec.gatewayClassName, "istio");
    assert.deepEqual(
      gotGateway.spec.listeners.map((l) => [l.name, l.port]),
      [["http", 80]],
    );
  });

  test("the schema and its CEL rules survive the install: bad routes are rejected with 422", async () => {
    const custom = loadKubeConfig(withGatewayApi.kubeconfigPath).makeApiClient(CustomObjectsApi);
    const negative = httpRoute("negative-weight", [{ name: "shop-primary", port: 80, weight: -1 }]);
    await assert.rejects(custom.createNamespacedCustomObject({ ...httpRoutes, body: negative }), (err: unknown) => {
      assert.equal(statusOf(err), 422);
      return true;
    });
    // A rule of x-kubernetes-validations, which the API server evaluates only if the CRD kept it.
    const portless = httpRoute("no-port", [{ name: "shop-primary", weight: 1 }]);
    await assert.rejects(custom.createNamespacedCustomObject({ ...httpRoutes, body: portless }), (err: unknown) => {
      assert.equal(statusOf(err), 422);
      assert.match(String((err as ApiException<unknown>).body), /Must have port for Service reference/);
      return true;
    });
  });

  test("started without it: no gateway.networking.k8s.io CRD, and HTTPRoutes are not served", async () => {
    const kc = loadKubeConfig(without.kubeconfigPath);
    const names = (await kc.makeApiClient(ApiextensionsV1Api).listCustomResourceDefinition()).items.map(
      (c) => c.metadata?.name ?? "",
    );
    assert.deepEqual(
      names.filter((n) => n.endsWith(`.${GROUP}`)),
      [],
    );
    const custom = kc.makeApiClient(CustomObjectsApi);
    await assert.rejects(
      custom.createNamespacedCustomObject({ ...httpRoutes, body: httpRoute("shop", weighted) }),
      (err: unknown) => {
        assert.equal(statusOf(err), 404);
        return true;
      },
    );
  });

  test("with-cluster --gateway-api without the file: one line naming `make gateway-api-crds`, no cluster", async () => {
    // A cache with everything the control plane needs but the Gateway API folder.
    const tc = resolveToolchain();
    const cache = await mkdtemp(join(tmpdir(), "canaryapp-cache-"));
    try {
      for (const dir of [dirname(tc.kubeApiserver), dirname(tc.etcd), dirname(tc.kwok), dirname(tc.istioCrds)]) {
        await symlink(dir, join(cache, basename(dir)));
      }
      const env = { ...process.env, CANARYAPP_CACHE: cache };
      const { code, stderr } = await withCluster(["--profile", "api", "--gateway-api", "--", "true"], env);
      assert.equal(code, 1, stderr);
      assert.equal(stderr.trim().split("\n").length, 1, stderr);
      assert.match(stderr, /gateway-api-v[0-9.]+\/crds\.yaml is missing: run `make gateway-api-crds`/);
    } finally {
      await rm(cache, { recursive: true, force: true });
    }
  });
});

/**
 * Proves the api profile is a real API server: Istio's CRDs are installed with their schemas, objects round-trip
 * through etcd, and schema validation rejects bad objects. Runs under `make test-integration` (KUBECONFIG set).
 */
import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import { after, before, describe, test } from "node:test";
import { ApiException, ApiextensionsV1Api, CoreV1Api, CustomObjectsApi } from "@kubernetes/client-node";
import { ISTIO_CRD_NAMES } from "../../e2e/cluster/index.js";
import { testKubeConfig } from "../support/kube.js";

const kc = testKubeConfig();
const core = kc.makeApiClient(CoreV1Api);
const custom = kc.makeApiClient(CustomObjectsApi);
const ext = kc.makeApiClient(ApiextensionsV1Api);

const namespace = `harness-${randomBytes(3).toString("hex")}`;
const vs = { group: "networking.istio.io", version: "v1", plural: "virtualservices", namespace } as const;

function virtualService(name: string, weights: [unknown, unknown]): object {
  return {
    apiVersion: "networking.istio.io/v1",
    kind: "VirtualService",
    metadata: { name, namespace },
    spec: {
      hosts: ["shop"],
      http: [
        {
          route: [
            { destination: { host: "shop", subset: "primary" }, weight: weights[0] },
            { destination: { host: "shop", subset: "secondary" }, weight: weights[1] },
          ],
        },
      ],
    },
  };
}

describe("local control plane, api profile", () => {
  before(async () => {
    await core.createNamespace({ body: { metadata: { name: namespace } } });
  });
  after(async () => {
    // Without kube-controller-manager the namespace stays Terminating; the cluster is thrown away anyway.
    await core.deleteNamespace({ name: namespace });
  });

  test("installs our CRDs and only the routing CRDs of Istio", async () => {
    const names = (await ext.listCustomResourceDefinition()).items.map((c) => c.metadata?.name ?? "");
    assert.ok(names.includes("canaryapps.canaryapp.io"), `canaryapps missing from ${names.join(", ")}`);
    for (const name of ISTIO_CRD_NAMES) assert.ok(names.includes(name), `${name} missing`);
    assert.deepEqual(
      names.filter((n) => n.endsWith(".istio.io")).sort(),
      [...ISTIO_CRD_NAMES].sort(),
      "no other Istio CRDs are installed",
    );
  });

  test("a VirtualService created through the API reads back", async () => {
    await custom.createNamespacedCustomObject({ ...vs, body: virtualService("shop", [90, 10]) });
    const got = (await custom.getNamespacedCustomObject({ ...vs, name: "shop" })) as {
      metadata: { uid?: string; resourceVersion?: string };
      spec: { http: { route: { weight: number; destination: { subset: string } }[] }[] };
    };
    assert.ok(got.metadata.uid, "the server assigned a uid");
    assert.ok(got.metadata.resourceVersion, "the object is stored in etcd");
    const route = got.spec.http[0]?.route ?? [];
    assert.deepEqual(
      route.map((r) => [r.destination.subset, r.weight]),
      [
        ["primary", 90],
        ["secondary", 10],
      ],
    );
  });

  test("a VirtualService whose weight is a string is rejected by schema validation with 422", async () => {
    await assert.rejects(
      custom.createNamespacedCustomObject({ ...vs, body: virtualService("bad-weight", ["ninety", 10]) }),
      (err: unknown) => {
        assert.ok(err instanceof ApiException, `expected an ApiException, got ${String(err)}`);
        assert.equal(err.code, 422);
        assert.match(String(err.body), /weight/);
        return true;
      },
    );
    // Rejected means not stored.
    await assert.rejects(custom.getNamespacedCustomObject({ ...vs, name: "bad-weight" }), (err: unknown) => {
      assert.ok(err instanceof ApiException && err.code === 404);
      return true;
    });
  });
});

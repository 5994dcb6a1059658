import { describe, test } from "node:test";
import assert from "node:assert/strict";
import { keyFromControllerOwner, keyFromLabel, objectKey, splitKey } from "./object-keys.js";

describe("keys", () => {
  test("objectKey and splitKey round-trip", () => {
    assert.equal(objectKey({ metadata: { name: "web", namespace: "shop" } }), "shop/web");
    assert.equal(objectKey({ metadata: { name: "node-1" } }), "node-1");
    assert.equal(objectKey({ metadata: {} }), undefined);
    assert.deepEqual(splitKey("shop/web"), { namespace: "shop", name: "web" });
    assert.deepEqual(splitKey("node-1"), { namespace: "", name: "node-1" });
  });

  test("keyFromLabel maps a child to its parent in the same namespace", () => {
    const keyOf = keyFromLabel("canaryapp.io/app");
    assert.equal(
      keyOf({ metadata: { name: "web-primary", namespace: "shop", labels: { "canaryapp.io/app": "web" } } }),
      "shop/web",
    );
    assert.equal(keyOf({ metadata: { name: "x", namespace: "shop", labels: { other: "web" } } }), undefined);
    assert.equal(keyOf({ metadata: { name: "x", namespace: "shop", labels: { "canaryapp.io/app": "" } } }), undefined);
    assert.equal(keyOf({ metadata: { name: "x" } }), undefined);
  });

  test("keyFromControllerOwner follows the controller reference of the kind and group, any version", () => {
    const keyOf = keyFromControllerOwner("canaryapp.io", "CanaryApp");
    const child = (refs: { apiVersion: string; kind: string; name: string; controller?: boolean }[]) => ({
      metadata: { name: "c", namespace: "shop", ownerReferences: refs },
    });
    assert.equal(
      keyOf(child([{ apiVersion: "canaryapp.io/v1alpha1", kind: "CanaryApp", name: "web", controller: true }])),
      "shop/web",
    );
    assert.equal(
      keyOf(child([{ apiVersion: "canaryapp.io/v2", kind: "CanaryApp", name: "web", controller: true }])),
      "shop/web",
    );
    assert.equal(
      keyOf(child([{ apiVersion: "canaryapp.io/v1alpha1", kind: "CanaryApp", name: "web" }])),
      undefined,
      "not the controller",
    );
    assert.equal(
      keyOf(child([{ apiVersion: "apps/v1", kind: "CanaryApp", name: "web", controller: true }])),
      undefined,
      "other group",
    );
    assert.equal(
      keyOf(child([{ apiVersion: "apps/v1", kind: "ReplicaSet", name: "rs", controller: true }])),
      undefined,
    );
  });
});

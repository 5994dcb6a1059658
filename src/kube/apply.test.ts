import { after, before, beforeEach, describe, test } from "node:test";
import assert from "node:assert/strict";
import { FIELD_MANAGER } from "../api/types.js";
import { deleteIfExists, patchMetadataAnnotations, patchStatus, serverSideApply } from "./apply.js";
import { KubeApiError, isConflict } from "./errors.js";
import { FakeApiServer, status } from "./fake-apiserver.test-helpers.js";
import type { KubeRest } from "./rest.js";

describe("apply helpers against an HTTP API server", () => {
  const server = new FakeApiServer();
  let objects: KubeRest;
  let custom: KubeRest;

  before(async () => {
    await server.start();
    objects = server.rest();
    custom = objects;
  });
  after(async () => {
    await objects.close();
    await server.stop();
  });
  beforeEach(() => {
    server.requests.length = 0;
    server.handler = () => undefined;
  });

  test("serverSideApply sends an apply patch with the field manager and force", async () => {
    server.handler = (req) => (req.method === "PATCH" ? { status: 200, body: req.body } : undefined);
    const vs = {
      apiVersion: "networking.istio.io/v1",
      kind: "VirtualService",
      metadata: { name: "web", namespace: "shop" },
      spec: { hosts: ["web"], http: [{ route: [{ destination: { host: "web" }, weight: 100 }] }] },
    };
    const stored = await serverSideApply(objects, vs);
    const [call] = server.calls();
    assert.ok(call);
    assert.equal(call.method, "PATCH");
    assert.equal(call.path, "/apis/networking.istio.io/v1/namespaces/shop/virtualservices/web");
    assert.equal(call.contentType, "application/apply-patch+yaml");
    assert.equal(call.query.get("fieldManager"), FIELD_MANAGER);
    assert.equal(call.query.get("force"), "true");
    assert.deepEqual(call.body, vs, "custom resources are sent untouched");
    assert.deepEqual(JSON.parse(JSON.stringify(stored)), vs);
  });

  test("serverSideApply keeps every field of a built-in kind", async () => {
    server.handler = (req) => (req.method === "PATCH" ? { status: 200, body: req.body } : undefined);
    const deployment = {
      apiVersion: "apps/v1",
      kind: "Deployment",
      metadata: { name: "web-primary", namespace: "shop", labels: { "canaryapp.io/app": "web" } },
      spec: {
        replicas: 2,
        selector: { matchLabels: { app: "web" } },
        template: {
          metadata: { labels: { app: "web" } },
          spec: { containers: [{ name: "app", image: "web:1", ports: [{ containerPort: 8080 }] }] },
        },
      },
    };
    await serverSideApply(objects, deployment);
    assert.deepEqual(server.calls()[0]?.body, deployment);
  });

  test("an apply rejection names the object and keeps the status code", async () => {
    server.handler = (req) =>
      req.method === "PATCH" ? status(422, "Invalid", 'Deployment.apps "web" is invalid: spec.replicas') : undefined;
    await assert.rejects(
      serverSideApply(objects, {
        apiVersion: "apps/v1",
        kind: "Deployment",
        metadata: { name: "web", namespace: "shop" },
      }),
      (err: unknown) =>
        err instanceof KubeApiError &&
        err.code === 422 &&
        err.message.startsWith("Deployment shop/web: apply: Deployment.apps") &&
        err.message.includes("spec.replicas"),
    );
  });

  test("deleteIfExists deletes in the background and treats 404 as done", async () => {
    server.handler = (req) =>
      req.method === "DELETE"
        ? { status: 200, body: { kind: "Status", apiVersion: "v1", status: "Success" } }
        : undefined;
    const ref = { apiVersion: "apps/v1", kind: "Deployment", namespace: "shop", name: "web-secondary" };
    assert.equal(await deleteIfExists(objects, ref), true);
    const [call] = server.calls();
    assert.equal(call?.method, "DELETE");
    assert.equal(call?.path, "/apis/apps/v1/namespaces/shop/deployments/web-secondary");
    assert.equal(call?.query.get("propagationPolicy"), "Background");

    server.handler = (req) => (req.method === "DELETE" ? status(404, "NotFound", "not found") : undefined);
    assert.equal(await deleteIfExists(objects, ref), false);

    server.handler = (req) => (req.method === "DELETE" ? status(403, "Forbidden", "nope") : undefined);
    await assert.rejects(deleteIfExists(objects, ref), /Deployment shop\/web-secondary: delete: nope/);
  });

  test("patchStatus sends a merge patch that removes stale keys, with a resourceVersion precondition", async () => {
    server.handler = (req) => (req.method === "PATCH" ? { status: 200, body: { status: {} } } : undefined);
    const ref = { group: "canaryapp.io", version: "v1alpha1", plural: "canaryapps", namespace: "shop", name: "web" };
    await patchStatus(
      custom,
      ref,
      { phase: "Healthy", observedGeneration: 3 },
      { resourceVersion: "42", previous: { phase: "Progressing", observedGeneration: 3, canary: { step: 1 } } },
    );
    const [call] = server.calls();
    assert.equal(call?.path, "/apis/canaryapp.io/v1alpha1/namespaces/shop/canaryapps/web/status");
    assert.equal(call?.contentType, "application/merge-patch+json");
    assert.deepEqual(call?.body, { status: { phase: "Healthy", canary: null }, metadata: { resourceVersion: "42" } });
  });

  test("patchStatus surfaces a conflict as 409", async () => {
    server.handler = (req) =>
      req.method === "PATCH" ? status(409, "Conflict", "the object has been modified") : undefined;
    const ref = { group: "canaryapp.io", version: "v1alpha1", plural: "canaryapps", namespace: "shop", name: "web" };
    await assert.rejects(patchStatus(custom, ref, { phase: "Healthy" }, { resourceVersion: "1" }), (err: unknown) =>
      isConflict(err),
    );
  });

  test("patchMetadataAnnotations sets and removes annotations with a merge patch", async () => {
    server.handler = (req) => (req.method === "PATCH" ? { status: 200, body: req.body } : undefined);
    await patchMetadataAnnotations(
      objects,
      { apiVersion: "canaryapp.io/v1alpha1", kind: "CanaryApp", namespace: "shop", name: "web" },
      { "canaryapp.io/promote": null, "canaryapp.io/note": "x" },
      { resourceVersion: "7" },
    );
    const [call] = server.calls();
    assert.equal(call?.path, "/apis/canaryapp.io/v1alpha1/namespaces/shop/canaryapps/web");
    assert.equal(call?.contentType, "application/merge-patch+json");
    assert.deepEqual(call?.body, {
      apiVersion: "canaryapp.io/v1alpha1",
      kind: "CanaryApp",
      metadata: {
        name: "web",
        namespace: "shop",
        resourceVersion: "7",
        annotations: { "canaryapp.io/promote": null, "canaryapp.io/note": "x" },
      },
    });
  });
});

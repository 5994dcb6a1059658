import assert from "node:assert/strict";
import { test } from "node:test";
import { byCreation, describeParent, parentKind, parentRefString } from "./gateway-api-objects.js";

// conversion.go, parentRefString: `group/kind/name/section/port.namespace`, the API's defaults filled in.
test("parentRefString and parentKind fill in the API's defaults (group gateway.networking.k8s.io, kind Gateway)", () => {
  assert.equal(
    parentRefString({ name: "public", namespace: "istio-system" }, "shop"),
    "gateway.networking.k8s.io/Gateway/public//0.istio-system",
  );
  assert.equal(parentRefString({ group: "", kind: "Service", name: "web", port: 80 }, "shop"), "/Service/web//80.shop");
  assert.deepEqual(
    [parentKind({ name: "g" }), parentKind({ group: "", kind: "Service" }), parentKind({ group: "x", kind: "Y" })],
    ["Gateway", "Service", "other"],
  );
});

test("describeParent", () => {
  assert.equal(describeParent({ group: "", kind: "Service", name: "web", port: 80 }, "shop"), "Service web:80");
  assert.equal(
    describeParent({ name: "public", namespace: "istio-system", sectionName: "http" }, "shop"),
    "Gateway istio-system/public/http",
  );
});

// conversion.go, sortRoutesByCreationTime: oldest first, then namespace, then name.
test("byCreation: oldest first, then namespace, then name", () => {
  const at = (name: string, namespace: string, t: string) => ({ metadata: { name, namespace, creationTimestamp: t } });
  const sorted = [
    at("b", "shop", "2026-01-02T00:00:00Z"),
    at("b", "blog", "2026-01-01T00:00:00Z"),
    at("a", "blog", "2026-01-01T00:00:00Z"),
  ]
    .sort(byCreation)
    .map((r) => `${r.metadata.namespace}/${r.metadata.name}`);
  assert.deepEqual(sorted, ["blog/a", "blog/b", "shop/b"]);
});

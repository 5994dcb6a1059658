import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { KubeApiError } from "../kube/errors.js";
import { serviceLookup } from "./service-lookup.js";

const web = { name: "web", namespace: "shop" };

describe("serviceLookup", () => {
  test("GETs the Service; 404 is none, 403 is not readable, anything else rejects", async () => {
    const asked: unknown[] = [];
    const answers: Record<string, () => Promise<unknown>> = {
      web: () => Promise.resolve({ spec: { type: "ClusterIP", selector: { app: "web" }, clusterIP: "10.0.0.1" } }),
      gone: () => Promise.reject(new KubeApiError("not found (HTTP 404)", 404, "NotFound")),
      hidden: () => Promise.reject(new KubeApiError("forbidden (HTTP 403)", 403, "Forbidden")),
      flaky: () => Promise.reject(new KubeApiError("unavailable (HTTP 503)", 503, "ServiceUnavailable")),
    };
    const lookup = serviceLookup({
      get: <T>(ref: { name?: string }) => {
        asked.push(ref);
        return (answers[ref.name ?? ""] ?? (() => Promise.reject(new Error("?"))))() as Promise<T>;
      },
    });
    assert.deepEqual(await lookup(web), {
      found: { type: "ClusterIP", selector: { app: "web" }, externalName: undefined },
    });
    assert.deepEqual(asked[0], { group: "", version: "v1", plural: "services", namespace: "shop", name: "web" });
    assert.deepEqual(await lookup({ ...web, name: "gone" }), { missing: true });
    assert.deepEqual(await lookup({ ...web, name: "hidden" }), { forbidden: true });
    await assert.rejects(lookup({ ...web, name: "flaky" }), /unavailable/);
  });
});

import assert from "node:assert/strict";
import { describe, test } from "node:test";
import type { CanaryAnalysisTemplate, CanaryApp } from "../api/types.js";
import { observeTemplates } from "./observe.js";
import type { Caches, ObjectCache } from "./ports.js";

const app: CanaryApp = {
  metadata: { namespace: "shop", name: "web" },
  spec: {
    image: "web:2",
    imageListenPort: 8080,
    analysis: { templates: [{ name: "slo", kind: "ClusterCanaryAnalysisTemplate" }, { name: "rates" }] },
  },
};

function cache(objects: CanaryAnalysisTemplate[], served?: boolean): ObjectCache<CanaryAnalysisTemplate> {
  return {
    get: (namespace, name) =>
      objects.find((o) => (o.metadata.namespace ?? "") === namespace && o.metadata.name === name),
    ...(served !== undefined ? { served: () => served } : {}),
  };
}

const caches = (
  namespaced: ObjectCache<CanaryAnalysisTemplate>,
  cluster: ObjectCache<CanaryAnalysisTemplate>,
): Caches => ({
  canaryApps: { get: () => undefined },
  children: new Map(),
  analysisTemplates: { namespaced, cluster },
});

const metrics = [{ name: "errors", query: "up", max: 0 }];

describe("observeTemplates", () => {
  test("a cluster template is looked up without a namespace, a namespaced one in the app's", () => {
    const got = observeTemplates(
      app,
      caches(
        cache([
          { metadata: { namespace: "shop", name: "rates" }, spec: { metrics: [{ ...metrics[0]!, name: "rates" }] } },
        ]),
        cache([{ metadata: { name: "slo" }, spec: { metrics } }]),
      ),
    );
    assert.equal(got?.kind, "resolved");
    assert.deepEqual(got?.kind === "resolved" ? got.templates.map((t) => `${t.kind}/${t.name}`) : [], [
      "ClusterCanaryAnalysisTemplate/slo",
      "CanaryAnalysisTemplate/rates",
    ]);
  });

  test("a kind the API server does not serve: TemplatesNotServed, not a missing template", () => {
    const got = observeTemplates(app, caches(cache([], true), cache([], false)));
    assert.equal(got?.kind === "problem" ? got.reason : "", "TemplatesNotServed");
  });

  test("without template caches every template is missing", () => {
    const got = observeTemplates(app, { canaryApps: { get: () => undefined }, children: new Map() });
    assert.equal(got?.kind === "problem" ? got.reason : "", "TemplateNotFound");
  });
});

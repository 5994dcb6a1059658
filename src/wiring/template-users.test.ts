import assert from "node:assert/strict";
import { describe, test } from "node:test";
import type { AnalysisTemplateRef, CanaryApp } from "../api/types.js";
import { TemplateUsers } from "./template-users.js";

function app(namespace: string, name: string, templates: AnalysisTemplateRef[]): CanaryApp {
  return { metadata: { namespace, name }, spec: { image: "x:1", imageListenPort: 8080, analysis: { templates } } };
}

const at = (namespace: string | undefined, name: string) => ({ metadata: { namespace, name } });

describe("TemplateUsers: which apps a template's change queues", () => {
  test("a namespaced template queues the apps of its own namespace that name it, and no other", () => {
    const users = new TemplateUsers();
    users.set(app("a", "web", [{ name: "rates" }]));
    users.set(app("b", "web", [{ name: "rates" }]));
    users.set(app("a", "api", [{ name: "latency" }]));
    assert.deepEqual(users.of("CanaryAnalysisTemplate", at("a", "rates")), ["a/web"]);
    assert.deepEqual(users.of("CanaryAnalysisTemplate", at("c", "rates")), []);
    assert.deepEqual(users.of("ClusterCanaryAnalysisTemplate", at(undefined, "rates")), []);
  });

  test("a cluster template queues every app that names it, whatever its namespace", () => {
    const users = new TemplateUsers();
    const ref: AnalysisTemplateRef = { name: "slo", kind: "ClusterCanaryAnalysisTemplate" };
    users.set(app("a", "web", [ref]));
    users.set(app("b", "web", [ref]));
    assert.deepEqual(users.of("ClusterCanaryAnalysisTemplate", at(undefined, "slo")).sort(), ["a/web", "b/web"]);
    assert.deepEqual(users.of("CanaryAnalysisTemplate", at("a", "slo")), []);
  });

  test("an app that stops naming a template, or is removed, is no longer queued for it", () => {
    const users = new TemplateUsers();
    users.set(app("a", "web", [{ name: "rates" }]));
    users.set(app("a", "web", [{ name: "latency" }]));
    assert.deepEqual(users.of("CanaryAnalysisTemplate", at("a", "rates")), []);
    assert.deepEqual(users.of("CanaryAnalysisTemplate", at("a", "latency")), ["a/web"]);
    users.remove(app("a", "web", []));
    assert.deepEqual(users.of("CanaryAnalysisTemplate", at("a", "latency")), []);
  });
});

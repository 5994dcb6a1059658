import assert from "node:assert/strict";
import { describe, test } from "node:test";
import type { CanaryApp } from "../api/types.js";
import { templatesLine } from "./view.js";

const app = (extra: Partial<CanaryApp>): CanaryApp => ({
  metadata: { name: "web", namespace: "shop" },
  spec: {
    image: "web:2",
    imageListenPort: 8080,
    analysis: { templates: [{ name: "slo", kind: "ClusterCanaryAnalysisTemplate" }, { name: "rates" }] },
  },
  ...extra,
});

describe("the plugin's Templates line", () => {
  test("an app without templates has none", () => {
    assert.equal(templatesLine({ metadata: {}, spec: { image: "web:2", imageListenPort: 8080 } }), undefined);
  });

  test("the templates the app names", () => {
    assert.equal(
      templatesLine(app({})),
      "Templates:   ClusterCanaryAnalysisTemplate/slo, CanaryAnalysisTemplate/rates",
    );
  });

  test("why they do not resolve, and what the running test recorded", () => {
    const line = templatesLine(
      app({
        status: {
          conditions: [
            {
              type: "AnalysisReady",
              status: "False",
              reason: "TemplateNotFound",
              message: "CanaryAnalysisTemplate/rates does not exist",
              lastTransitionTime: "2026-03-01T12:00:00Z",
            },
          ],
          canary: {
            image: "web:2",
            stage: "Stepping",
            step: 0,
            startedAt: "2026-03-01T12:00:00Z",
            stepStartedAt: "2026-03-01T12:00:00Z",
            failedChecks: 0,
            analysisTemplates: [
              {
                kind: "ClusterCanaryAnalysisTemplate",
                name: "slo",
                resourceVersion: "7",
                metrics: [{ name: "errors", query: "up", max: 0 }],
              },
            ],
          },
        },
      }),
    );
    assert.equal(
      line,
      "Templates:   ClusterCanaryAnalysisTemplate/slo, CanaryAnalysisTemplate/rates (TemplateNotFound: CanaryAnalysisTemplate/rates does not exist); this test: ClusterCanaryAnalysisTemplate/slo at resourceVersion 7 (errors)",
    );
  });
});

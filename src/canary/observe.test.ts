import assert from "node:assert/strict";
import { test } from "node:test";
import { observePods } from "./observe.js";

const pod = (app: string, track: string, ready: boolean, imageID: string, deleting = false): unknown => ({
  metadata: {
    labels: { "canaryapp.io/app": app, "canaryapp.io/track": track },
    ...(deleting ? { deletionTimestamp: "2026-01-01T00:00:00Z" } : {}),
  },
  spec: {
    containers: [
      { name: "istio-proxy", image: "proxy" },
      { name: "app", image: "app:v2" },
    ],
  },
  status: {
    conditions: [{ type: "Ready", status: ready ? "True" : "False" }],
    containerStatuses: [
      { name: "istio-proxy", imageID: "proxy@sha256:x" },
      { name: "app", imageID },
    ],
  },
});

test("the app's secondary pods: the app container's image and imageID, ready unless being deleted", () => {
  const pods = [
    pod("web", "secondary", true, "app@sha256:1"),
    pod("web", "secondary", false, ""),
    pod("web", "secondary", true, "app@sha256:2", true),
    pod("web", "primary", true, "app@sha256:3"),
    pod("other", "secondary", true, "app@sha256:4"),
  ];
  assert.deepEqual(observePods(pods, "web", "app"), [
    { image: "app:v2", imageID: "app@sha256:1", ready: true },
    { image: "app:v2", imageID: "", ready: false },
    { image: "app:v2", imageID: "app@sha256:2", ready: false },
  ]);
});

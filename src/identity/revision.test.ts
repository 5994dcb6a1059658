import assert from "node:assert/strict";
import { describe, test } from "node:test";
import fc from "fast-check";
import type { PodTemplateParts } from "../api/types.js";
import { describeChanges, revisionOf, sameSettings, settingsRevisionOf } from "./revision.js";

const base: PodTemplateParts = { imageListenPort: 8080, pod: { env: [{ name: "FOO", value: "1" }] } };

describe("pod-template revisions", () => {
  test("a revision is stable: the order of keys does not change it, and it is 10 hex digits", () => {
    const reordered = { pod: { env: [{ value: "1", name: "FOO" }] }, imageListenPort: 8080 } as PodTemplateParts;
    assert.equal(revisionOf("app:v1", base), revisionOf("app:v1", reordered));
    assert.match(revisionOf("app:v1", base), /^[0-9a-f]{10}$/);
  });

  test("the same image by another name is the same revision; another image is another", () => {
    assert.equal(revisionOf("app:v1", base), revisionOf("docker.io/library/app:v1", base));
    assert.notEqual(revisionOf("app:v1", base), revisionOf("app:v2", base));
  });

  const changes: [string, PodTemplateParts, string][] = [
    ["an env value", { ...base, pod: { env: [{ name: "FOO", value: "2" }] } }, "env FOO changed"],
    [
      "an env variable added",
      {
        ...base,
        pod: {
          env: [
            { name: "FOO", value: "1" },
            { name: "BAR", value: "x" },
          ],
        },
      },
      "env BAR added",
    ],
    ["env removed", { ...base, pod: {} }, "env FOO removed"],
    ["the port", { ...base, imageListenPort: 9090 }, "imageListenPort 8080 → 9090"],
    ["resources", { ...base, pod: { ...base.pod, resources: { limits: { cpu: "1" } } } }, "resources changed"],
    [
      "a probe",
      { ...base, pod: { ...base.pod, readinessProbe: { httpGet: { path: "/" } } } },
      "readiness probe changed",
    ],
    [
      "args and command",
      { ...base, pod: { ...base.pod, args: ["-v"], command: ["/app"] } },
      "args changed; command changed",
    ],
  ];
  for (const [name, to, expected] of changes) {
    test(`${name} is a new revision, described as "${expected}"`, () => {
      assert.notEqual(revisionOf("app:v1", to), revisionOf("app:v1", base));
      assert.equal(sameSettings(base, to), false);
      assert.equal(describeChanges(base, to), expected);
    });
  }

  test("nothing changed: the same settings, nothing described", () => {
    assert.ok(sameSettings(base, structuredClone(base)));
    assert.equal(describeChanges(base, structuredClone(base)), "");
  });

  test("property: any env value change is a new settings revision", () => {
    fc.assert(
      fc.property(fc.string(), fc.string(), (a, b) => {
        const left = { imageListenPort: 1, pod: { env: [{ name: "X", value: a }] } };
        const right = { imageListenPort: 1, pod: { env: [{ name: "X", value: b }] } };
        return (settingsRevisionOf(left) === settingsRevisionOf(right)) === (a === b);
      }),
    );
  });
});

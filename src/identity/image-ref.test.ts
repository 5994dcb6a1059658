import assert from "node:assert/strict";
import { describe, test } from "node:test";
import fc from "fast-check";
import { digestOfImageID, normaliseImage, pinImage, sameImage } from "./image-ref.js";

const D1 = `sha256:${"a".repeat(64)}`;
const D2 = `sha256:${"b".repeat(64)}`;

describe("image references", () => {
  const normalised: [string, string][] = [
    ["app", "docker.io/library/app:latest"],
    ["app:v3", "docker.io/library/app:v3"],
    ["docker.io/library/app:v3", "docker.io/library/app:v3"],
    ["team/app:v3", "docker.io/team/app:v3"],
    ["registry.example.com/team/app", "registry.example.com/team/app:latest"],
    ["localhost:5000/app:v1", "localhost:5000/app:v1"],
    [`app@${D1}`, `docker.io/library/app@${D1}`],
    [`app:v3@${D1}`, `docker.io/library/app:v3@${D1}`],
  ];
  for (const [reference, expected] of normalised) {
    test(`${reference} is ${expected}`, () => assert.equal(normaliseImage(reference), expected));
  }

  test("app:v3, docker.io/library/app:v3 and app@digest of the same build are one image", () => {
    assert.ok(sameImage("app:v3", "docker.io/library/app:v3"));
    assert.ok(sameImage("app:v3", `app@${D1}`, { a: D1 }));
    assert.ok(sameImage(`docker.io/library/app@${D1}`, "app:v3", { b: D1 }));
    assert.ok(!sameImage("app:v3", `app@${D2}`, { a: D1 }), "another build");
    assert.ok(!sameImage("app:v3", `other@${D1}`, { a: D1 }), "another repository");
    assert.ok(!sameImage("app:v3", "app:v4"));
    assert.ok(!sameImage("app:v3", `app@${D1}`), "a tag whose digest is unknown is not a digest");
  });

  const ids: [string, string | undefined][] = [
    [`docker-pullable://app@${D1}`, D1],
    [`docker.io/library/app@${D1}`, D1],
    [`registry.example.com:5000/team/app@${D1}`, D1],
    [D1, undefined], // the local image's config ID: no registry serves it
    ["", undefined],
    ["app@sha256:short", undefined],
  ];
  for (const [imageID, expected] of ids) {
    test(`imageID ${JSON.stringify(imageID)} gives ${expected ?? "no digest"}`, () =>
      assert.equal(digestOfImageID(imageID), expected));
  }

  test("a reference is pinned in the user's spelling, its tag dropped", () => {
    assert.equal(pinImage("app:v3", D1), `app@${D1}`);
    assert.equal(pinImage("localhost:5000/app:v3", D1), `localhost:5000/app@${D1}`);
    assert.equal(pinImage("localhost:5000/app", D1), `localhost:5000/app@${D1}`);
    assert.equal(pinImage(`app:v3@${D2}`, D1), `app@${D1}`);
  });

  test("property: a pinned reference is the same image as the reference with that digest known", () => {
    const part = fc.stringMatching(/^[a-z][a-z0-9]{0,8}$/);
    fc.assert(
      fc.property(part, part, fc.stringMatching(/^[a-f0-9]{64}$/), (repo, tag, hex) => {
        const reference = `${repo}:${tag}`;
        const digest = `sha256:${hex}`;
        const pinned = pinImage(reference, digest);
        return sameImage(reference, pinned, { a: digest }) && normaliseImage(pinned).endsWith(`@${digest}`);
      }),
    );
  });
});

import assert from "node:assert/strict";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, test } from "node:test";
import { behaviourFor, DEFAULT_BEHAVIOURS, loadBehaviourFile, parseBehaviourTable } from "./behaviour.js";

describe("behaviourFor", () => {
  test("v3 is the bad release by default; anything else is healthy", () => {
    assert.equal(behaviourFor("ghcr.io/acme/sample-app:v3", DEFAULT_BEHAVIOURS).errorRate, 1);
    assert.deepEqual(behaviourFor("ghcr.io/acme/sample-app:v2", DEFAULT_BEHAVIOURS), {
      errorRate: 0,
      latencyMs: 10,
      jitterMs: 20,
    });
    assert.equal(behaviourFor("sample-app:v30", DEFAULT_BEHAVIOURS).errorRate, 0);
  });

  test("an exact image wins, then the longest suffix", () => {
    const table = parseBehaviourTable({
      images: {
        ":v2": { errorRate: 0.5 },
        "acme/web:v2": { errorRate: 0.25 },
        "registry.local/acme/web:v2": { errorRate: 0.125 },
      },
    });
    assert.equal(behaviourFor("registry.local/acme/web:v2", table).errorRate, 0.125);
    assert.equal(behaviourFor("other.io/acme/web:v2", table).errorRate, 0.25);
    assert.equal(behaviourFor("other.io/x/api:v2", table).errorRate, 0.5);
    assert.equal(behaviourFor("other.io/x/api:v1", table).errorRate, 0);
  });
});

describe("parseBehaviourTable", () => {
  test("fills missing fields from the default, keeps the built-in :v3 unless overridden", () => {
    const table = parseBehaviourTable({ default: { latencyMs: 100 }, images: { ":v2": { errorRate: 0.1 } } });
    assert.deepEqual(table.default, { errorRate: 0, latencyMs: 100, jitterMs: 20 });
    assert.deepEqual(table.images[":v2"], { errorRate: 0.1, latencyMs: 100, jitterMs: 20 });
    assert.equal(table.images[":v3"]?.errorRate, 1);
    assert.equal(parseBehaviourTable({ images: { ":v3": { errorRate: 0 } } }).images[":v3"]?.errorRate, 0);
  });

  test("rejects what it does not understand, naming the place", () => {
    assert.throws(() => parseBehaviourTable([]), /behaviour: expected an object/);
    assert.throws(() => parseBehaviourTable({ image: {} }), /unknown field\(s\) image/);
    assert.throws(
      () => parseBehaviourTable({ images: { ":v2": { errorRate: 2 } } }),
      /behaviour.images\[":v2"\].errorRate: expected a number from 0 to 1/,
    );
    assert.throws(() => parseBehaviourTable({ images: { ":v2": { errors: 1 } } }), /unknown field\(s\) errors/);
    assert.throws(() => parseBehaviourTable({ images: { "": {} } }), /empty key/);
  });

  test("loads a file, and names it in errors", async () => {
    const dir = mkdtempSync(join(tmpdir(), "canaryapp-behaviour-"));
    try {
      writeFileSync(join(dir, "ok.json"), JSON.stringify({ images: { ":v4": { errorRate: 0.3 } } }));
      writeFileSync(join(dir, "bad.json"), "{ nope");
      assert.equal((await loadBehaviourFile(join(dir, "ok.json"))).images[":v4"]?.errorRate, 0.3);
      await assert.rejects(
        loadBehaviourFile(join(dir, "bad.json")),
        new RegExp(`behaviour file ${join(dir, "bad.json")}: `),
      );
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

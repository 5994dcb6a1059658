import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { describe, test } from "node:test";
import { controllerNodeFlags, DEFAULT_CONTROLLER_NODE_FLAGS } from "./node-flags.js";

describe("the controller's node flags", () => {
  test("default, override, and an empty override for none", () => {
    assert.deepEqual(controllerNodeFlags({}), ["--optimize-for-size"]);
    assert.deepEqual(controllerNodeFlags({ CONTROLLER_NODE_FLAGS: " --max-semi-space-size=1  --jitless " }), [
      "--max-semi-space-size=1",
      "--jitless",
    ]);
    assert.deepEqual(controllerNodeFlags({ CONTROLLER_NODE_FLAGS: "" }), []);
  });

  test("the image's ENTRYPOINT runs the controller with the default flags", () => {
    const dockerfile = readFileSync(new URL("../../Dockerfile", import.meta.url), "utf8");
    const line = /^ENTRYPOINT (.*)$/m.exec(dockerfile)?.[1];
    assert.ok(line !== undefined, "the Dockerfile has an ENTRYPOINT");
    assert.deepEqual(JSON.parse(line), ["node", ...DEFAULT_CONTROLLER_NODE_FLAGS, "dist/src/main.js"]);
  });
});

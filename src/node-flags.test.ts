import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { describe, test } from "node:test";
import { controllerNodeFlags, DEFAULT_CONTROLLER_NODE_FLAGS } from "./node-flags.js";

/**
 * Run under the default flags: a local server answers a Prometheus query, a webhook post and a fetch (what
 * client-node's OpenID Connect refresh uses), through the controller's own modules.
 */
const CLIENTS_SCRIPT = `
const { PrometheusProvider } = await import(${JSON.stringify(new URL("./analysis/providers/prometheus/client.js", import.meta.url).href)});
const { postJson } = await import(${JSON.stringify(new URL("./webhooks/post.js", import.meta.url).href)});
const http = process.getBuiltinModule("node:http");
const server = http.createServer((req, res) => {
  req.resume();
  res.writeHead(200, { "content-type": "application/json" });
  res.end(JSON.stringify({ status: "success", data: { resultType: "scalar", result: [1, "42"] } }));
});
await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve));
const url = "http://127.0.0.1:" + server.address().port;
const query = await new PrometheusProvider({ endpoint: url }).query("vector(42)");
const post = await postJson(url + "/hook", { a: 1 }, { timeoutSeconds: 5, retries: 0 });
const fetched = (await fetch(url)).status;
server.close();
console.log(JSON.stringify({ query, post, fetched }));
`;

describe("the controller's node flags", () => {
  test("default, override, and an empty override for none", () => {
    assert.deepEqual(controllerNodeFlags({}), [
      "--optimize-for-size",
      "--max-opt=1",
      "--no-node-snapshot",
      "--single-threaded",
    ]);
    assert.deepEqual(controllerNodeFlags({ CONTROLLER_NODE_FLAGS: " --max-semi-space-size=1  --jitless " }), [
      "--max-semi-space-size=1",
      "--jitless",
    ]);
    assert.deepEqual(controllerNodeFlags({ CONTROLLER_NODE_FLAGS: "" }), []);
  });

  test("under the default flags, the controller's HTTP clients work: Prometheus, webhooks, fetch", () => {
    const run = spawnSync(process.execPath, [...controllerNodeFlags({}), "--input-type=module", "-e", CLIENTS_SCRIPT], {
      encoding: "utf8",
      timeout: 60_000,
    });
    assert.equal(run.status, 0, run.stderr);
    assert.deepEqual(JSON.parse(run.stdout), {
      query: { kind: "value", value: 42 },
      post: { status: 200 },
      fetched: 200,
    });
  });

  test("the image's ENTRYPOINT runs the controller with the default flags", () => {
    const dockerfile = readFileSync(new URL("../../Dockerfile", import.meta.url), "utf8");
    const line = /^ENTRYPOINT (.*)$/m.exec(dockerfile)?.[1];
    assert.ok(line !== undefined, "the Dockerfile has an ENTRYPOINT");
    assert.deepEqual(JSON.parse(line), ["node", ...DEFAULT_CONTROLLER_NODE_FLAGS, "dist/src/main.js"]);
  });
});

import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { fileURLToPath } from "node:url";
import { describe, test } from "node:test";
import { controllerNodeFlags } from "./node-flags.js";

const MAIN = fileURLToPath(new URL("./main.js", import.meta.url));

/**
 * Preloaded into the controller: records every module it resolves (its own files and packages) and, at exit,
 * prints them with the list of Node's own modules it loaded.
 */
const RECORDER = `data:text/javascript,${encodeURIComponent(`
import { registerHooks } from "node:module";
const urls = [];
registerHooks({ resolve(specifier, context, next) { const r = next(specifier, context); urls.push(r.url); return r; } });
process.on("exit", () => process.stderr.write("\\nLOADED " + JSON.stringify({ urls, builtins: process.moduleLoadList }) + "\\n"));
`)}`;

interface Loaded {
  /** file: URLs of the packages and files resolved. */
  urls: string[];
  /** "NativeModule x" and "Internal Binding x" entries of Node's own modules. */
  builtins: string[];
}

/** The modules the controller process has loaded once its start-up imports are done (it runs `--help`). */
function loadedAtStartup(): Loaded {
  const run = spawnSync(process.execPath, [...controllerNodeFlags(), "--import", RECORDER, MAIN, "--help"], {
    encoding: "utf8",
    timeout: 60_000,
  });
  assert.equal(run.status, 0, run.stderr);
  const line = run.stderr.split("\n").find((l) => l.startsWith("LOADED "));
  assert.ok(line !== undefined, `no module list printed: ${run.stderr}`);
  return JSON.parse(line.slice("LOADED ".length)) as Loaded;
}

describe("the controller's start-up loads only what it uses (ADR 0017)", () => {
  const loaded = loadedAtStartup();

  test("it loads its own modules, prom-client and pino (the recorder sees the graph)", () => {
    assert.ok(loaded.urls.some((u) => u.endsWith("/src/app.js")));
    assert.ok(loaded.urls.some((u) => u.includes("/node_modules/prom-client/")));
    assert.ok(loaded.urls.some((u) => u.includes("/node_modules/pino/")));
  });

  test("no client-node, undici or axios: the controller talks to the API server and Prometheus itself", () => {
    for (const pkg of ["@kubernetes/client-node", "undici", "axios", "prometheus-query"]) {
      const found = loaded.urls.filter((u) => u.includes(`/node_modules/${pkg}/`));
      assert.deepEqual(found, [], `${pkg} is loaded at start-up`);
    }
  });

  test("not Node's bundled undici either (an ES import of node:http loads it through http.WebSocket)", () => {
    assert.ok(loaded.builtins.includes("NativeModule https"), "the list names Node's modules");
    assert.ok(!loaded.builtins.includes("NativeModule internal/deps/undici/undici"));
  });
});

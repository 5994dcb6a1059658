import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { describe, test } from "node:test";
import { atLeast, nodeVersionProblem, REQUIRED_NODE } from "./node-version.js";

const MAIN = fileURLToPath(new URL("./main.js", import.meta.url));

describe("the Node.js version the plugin needs", () => {
  const cases: [string, string, boolean][] = [
    ["20.11.1", "22.19", false],
    ["v20.19.0", "22.19", false],
    ["22.18.9", "22.19", false],
    ["22.19.0", "22.19", true],
    ["22.20.0", "22.19", true],
    ["24.0.0", "22.19", true],
    ["24.0.0-pre", "22.19", true],
    ["100.0.0", "22.19", true],
  ];
  for (const [version, required, ok] of cases) {
    test(`${version} ${ok ? "will do" : "is too old"} for ${required}`, () => {
      assert.equal(atLeast(version, required), ok);
    });
  }

  test("the message is one line naming the version needed, the one found, and how to get it", () => {
    const message = nodeVersionProblem("20.11.1", "22.19");
    assert.equal(
      message,
      "kubectl canaryapp needs Node.js 22.19 or newer, and this is Node.js 20.11.1: install a current LTS from nodejs.org (or `nvm install 24`) and put it first on PATH",
    );
    assert.equal(nodeVersionProblem(process.versions.node), undefined, "the Node running the tests will do");
  });

  test("it is package.json's engines.node", () => {
    const pkg = JSON.parse(readFileSync(new URL("../../../package.json", import.meta.url), "utf8")) as {
      engines: { node: string };
    };
    assert.equal(pkg.engines.node, `>=${REQUIRED_NODE}`);
  });

  test("the plugin on an older Node prints that line, exits 1, and imports nothing else first", () => {
    // Node 20 is not installed here: the plugin is told it runs on one, before its first import.
    const fake = `data:text/javascript,${encodeURIComponent(`
import { registerHooks } from "node:module";
Object.defineProperty(process.versions, "node", { value: "20.11.1" });
const urls = [];
registerHooks({ resolve(s, c, next) { const r = next(s, c); urls.push(r.url); return r; } });
process.on("exit", () => process.stderr.write("LOADED " + JSON.stringify(urls) + "\\n"));
`)}`;
    const run = spawnSync(process.execPath, ["--import", fake, MAIN, "dashboard"], {
      encoding: "utf8",
      timeout: 30_000,
    });
    assert.equal(run.status, 1);
    const lines = run.stderr.trimEnd().split("\n");
    assert.equal(lines[0], `error: ${nodeVersionProblem("20.11.1")}`);
    const loaded = JSON.parse(lines[1]?.slice("LOADED ".length) ?? "[]") as string[];
    assert.deepEqual(
      loaded.filter((u) => !u.startsWith("node:")).map((u) => u.split("/dist/")[1]),
      ["src/cli/main.js", "src/cli/node-version.js"],
    );
    assert.equal(run.stdout, "");
  });
});

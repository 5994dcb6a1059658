/**
 * The Argo CD health check and actions (integrations/argocd/), run by a real Lua 5.1 interpreter — the
 * language version of gopher-lua, which Argo CD embeds. Every fixture of health_test.yaml must map to its
 * health and message, every action test of action_test.yaml must produce its annotations and leave spec
 * alone, and the argocd-cm snippet must carry exactly these scripts.
 */
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, test } from "node:test";
import { loadYaml } from "@kubernetes/client-node";
import { findRepoRoot } from "../../e2e/cluster/toolchain.js";
import { PHASES } from "../server/app-metrics.js";

const LUA = process.env["LUA"] ?? "lua5.1";
const ROOT = findRepoRoot();
const DIR = join(ROOT, "integrations/argocd/resource_customizations/canaryapp.io/CanaryApp");

/** Fails at once, with the fix, when the interpreter is missing (`make deps` installs it). */
function requireLua(): void {
  try {
    execFileSync(LUA, ["-v"], { stdio: "pipe" });
  } catch (error) {
    throw new Error(`${LUA} is needed to test the Argo CD Lua: apt-get install lua5.1 (or make deps)`, {
      cause: error,
    });
  }
}
requireLua();

/** A Lua 5.1 literal for a JSON value (strings escaped byte by byte: Lua 5.1 has no \u escapes). */
export function toLua(value: unknown): string {
  if (value === null || value === undefined) return "nil";
  if (typeof value === "boolean" || typeof value === "number") return String(value);
  if (typeof value === "string") {
    let out = '"';
    for (const byte of Buffer.from(value, "utf8")) {
      const c = String.fromCharCode(byte);
      out += byte >= 0x20 && byte < 0x7f && c !== '"' && c !== "\\" ? c : `\\${byte}`;
    }
    return `${out}"`;
  }
  if (Array.isArray(value)) return `{${value.map(toLua).join(", ")}}`;
  if (typeof value === "object") {
    const entries = Object.entries(value as Record<string, unknown>).filter(([, v]) => v !== null && v !== undefined);
    return `{${entries.map(([k, v]) => `[${toLua(k)}] = ${toLua(v)}`).join(", ")}}`;
  }
  throw new Error(`no Lua literal for ${typeof value}`);
}

/** Lua that encodes a result table as JSON (arrays: tables with keys 1..n; an empty table is an object). */
const TO_JSON = `
local function encode(v)
  local t = type(v)
  if t == "nil" then return "null" end
  if t == "boolean" or t == "number" then return tostring(v) end
  if t == "string" then return (string.format("%q", v):gsub("\\\\\\n", "\\\\n")) end
  local n = 0
  for _ in pairs(v) do n = n + 1 end
  if n > 0 and n == #v then
    local parts = {}
    for i = 1, #v do parts[i] = encode(v[i]) end
    return "[" .. table.concat(parts, ",") .. "]"
  end
  local keys = {}
  for k in pairs(v) do keys[#keys + 1] = k end
  table.sort(keys)
  local parts = {}
  for _, k in ipairs(keys) do parts[#parts + 1] = string.format("%q", k) .. ":" .. encode(v[k]) end
  return "{" .. table.concat(parts, ",") .. "}"
end
`;

/** Runs `script` with the global `obj` set to `object`, as Argo CD does; returns what it returned, as JSON. */
function runLua(script: string, object: unknown): unknown {
  const program = `${TO_JSON}\nobj = ${toLua(object)}\nlocal result = dofile(${toLua(script)})\nio.write(encode(result))\n`;
  const out = execFileSync(LUA, ["-"], { input: program, encoding: "utf8" });
  return JSON.parse(out);
}

function yamlFile<T>(path: string): T {
  return loadYaml<T>(readFileSync(path, "utf8"));
}

interface HealthTest {
  healthStatus: { status: string; message?: string };
  inputPath: string;
}

describe("Argo CD health.lua", () => {
  const { tests } = yamlFile<{ tests: HealthTest[] }>(join(DIR, "health_test.yaml"));

  for (const t of tests) {
    test(`${t.inputPath} → ${t.healthStatus.status}`, () => {
      const health = runLua(join(DIR, "health.lua"), yamlFile(join(DIR, t.inputPath))) as {
        status: string;
        message?: string;
      };
      assert.equal(health.status, t.healthStatus.status);
      assert.equal(health.message ?? "", t.healthStatus.message ?? "");
    });
  }

  test("every fixture in testdata is in health_test.yaml, and every phase has a captured one", () => {
    const listed = new Set(tests.map((t) => t.inputPath));
    const files = readdirSync(join(DIR, "testdata")).filter((f) => f.endsWith(".yaml") && !f.includes(".action-"));
    assert.deepEqual(
      files.filter((f) => !listed.has(`testdata/${f}`)),
      [],
      "fixtures without a health test",
    );
    const phases = new Set(
      files
        .filter((f) => f.startsWith("captured-"))
        .map((f) => yamlFile<{ status?: { phase?: string } }>(join(DIR, "testdata", f)).status?.phase),
    );
    for (const phase of PHASES) {
      assert.ok(phases.has(phase), `no captured fixture in phase ${phase}`);
    }
  });
});

interface ActionTests {
  discoveryTests: { inputPath: string; result: { name: string; disabled: boolean }[] }[];
  actionTests: { action: string; inputPath: string; expectedAnnotations: Record<string, string | null> }[];
}

describe("Argo CD actions", () => {
  const spec = yamlFile<ActionTests>(join(DIR, "actions/action_test.yaml"));

  for (const t of spec.discoveryTests) {
    test(`discovery on ${t.inputPath}`, () => {
      const actions = runLua(join(DIR, "actions/discovery.lua"), yamlFile(join(DIR, t.inputPath))) as Record<
        string,
        { disabled: boolean }
      >;
      const got = Object.entries(actions)
        .map(([name, a]) => ({ name, disabled: a.disabled }))
        .sort((a, b) => a.name.localeCompare(b.name));
      assert.deepEqual(
        got,
        [...t.result].sort((a, b) => a.name.localeCompare(b.name)),
      );
    });
  }

  for (const t of spec.actionTests) {
    test(`${t.action} on ${t.inputPath}`, () => {
      const input = yamlFile<{ metadata: { annotations?: Record<string, string> }; spec: unknown }>(
        join(DIR, t.inputPath),
      );
      const output = runLua(join(DIR, `actions/${t.action}/action.lua`), input) as typeof input;
      const want = { ...input.metadata.annotations };
      for (const [key, value] of Object.entries(t.expectedAnnotations)) {
        if (value === null) delete want[key];
        else want[key] = value;
      }
      assert.deepEqual(output.metadata.annotations ?? {}, want, "annotations after the action");
      assert.deepEqual(output.spec, input.spec, "the action leaves spec alone");
    });
  }

  test("every action has a test, and the README's annotation", () => {
    const readme = readFileSync(join(ROOT, "README.md"), "utf8");
    for (const action of ["promote", "abort", "retry", "pause", "resume", "approve"]) {
      const tested = spec.actionTests.filter((t) => t.action === action);
      assert.ok(tested.length > 0, `no test of ${action}`);
      for (const key of Object.keys(tested[0]?.expectedAnnotations ?? {})) {
        assert.ok(readme.includes(`kubectl annotate canaryapp NAME ${key}`), `${key} is not the README's annotation`);
      }
    }
  });
});

describe("argocd-cm snippet", () => {
  interface ActionsConfig {
    "discovery.lua": string;
    definitions: { name: string; "action.lua": string }[];
  }
  const cm = yamlFile<{ data: Record<string, string> }>(join(ROOT, "integrations/argocd/argocd-cm.yaml"));

  test("installs exactly the health check and actions of resource_customizations", () => {
    assert.equal(
      cm.data["resource.customizations.health.canaryapp.io_CanaryApp"],
      readFileSync(join(DIR, "health.lua"), "utf8"),
    );
    const actions = loadYaml<ActionsConfig>(cm.data["resource.customizations.actions.canaryapp.io_CanaryApp"] ?? "");
    assert.equal(actions["discovery.lua"], readFileSync(join(DIR, "actions/discovery.lua"), "utf8"));
    assert.deepEqual(
      actions.definitions.map((d) => d.name),
      ["promote", "abort", "retry", "pause", "resume", "approve"],
    );
    for (const d of actions.definitions) {
      assert.equal(d["action.lua"], readFileSync(join(DIR, `actions/${d.name}/action.lua`), "utf8"), d.name);
    }
  });
});

/**
 * docs/architecture.md stays true: every path it names exists, and every folder of src/ is in its table.
 */
import assert from "node:assert/strict";
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { test } from "node:test";
import { findRepoRoot } from "../../e2e/cluster/toolchain.js";

const root = findRepoRoot();
const page = readFileSync(join(root, "docs", "architecture.md"), "utf8");
/** Every `src/...` or `docs/...` in backquotes. */
const named = [...page.matchAll(/`((?:src|docs)\/[^`\s]*)`/g)].map((m) => m[1] ?? "");

test("docs/architecture.md names only paths that exist", () => {
  assert.ok(named.length > 20, `${named.length} paths named`);
  const missing = named.filter((path) => !existsSync(join(root, path)));
  assert.deepEqual(missing, [], "named in docs/architecture.md but not in the repo");
});

test("docs/architecture.md's table has every folder of src/", () => {
  const folders = readdirSync(join(root, "src"), { withFileTypes: true })
    .filter((entry) => entry.isDirectory())
    .map((entry) => `src/${entry.name}/`);
  const absent = folders.filter((folder) => !page.includes(`| \`${folder}\``));
  assert.deepEqual(absent, [], "folders of src/ without a row in docs/architecture.md");
});

test("the readers of a plan never take the context they could write (ADR 0028)", () => {
  // Each takes a PlanView (read-only all the way down), or plain facts.
  const readers = ["facts.ts", "subject.ts", "status-conditions.ts", "decisions.ts", "message.ts", "phase.ts"];
  const writing = readers.filter((file) =>
    /\bPlanContext\b/.test(readFileSync(join(root, "src", "rollout", file), "utf8")),
  );
  assert.deepEqual(writing, [], "readers of src/rollout/ naming PlanContext");
});

/**
 * examples/limited-user/README.md says what a limited user may and may not do, each line beside the tests that
 * prove it. Every test it names must exist: a file of test/integration holding the quoted words, so a line
 * cannot outlive its proof (the tests themselves run under `make test-integration`).
 */
import assert from "node:assert/strict";
import { readFile } from "node:fs/promises";
import { join } from "node:path";
import { describe, test } from "node:test";
import { findRepoRoot } from "../../e2e/cluster/toolchain.js";

const root = findRepoRoot();

/** The table rows of the README's two tables: what is said, and the [file, words] that prove it. */
async function rows(): Promise<{ line: string; proofs: [string, string][] }[]> {
  const readme = await readFile(join(root, "examples", "limited-user", "README.md"), "utf8");
  return readme
    .split("\n")
    .filter((l) => l.startsWith("| ") && !l.startsWith("| ---") && !/^\| alice may/.test(l))
    .map((l) => {
      const [, line = "", proof = ""] = l.split(/ \| |^\| | \|$/);
      const proofs: [string, string][] = [];
      // `file.test.ts` "words", "more words"; `other.test.ts` "…"
      for (const part of proof.split(";")) {
        const file = /`([\w-]+\.test\.ts)`/.exec(part)?.[1];
        for (const m of part.matchAll(/"([^"]+)"/g)) if (file !== undefined) proofs.push([file, m[1] ?? ""]);
      }
      return { line, proofs };
    });
}

describe("examples/limited-user/README.md", () => {
  test("both tables are there, every line with at least one proof", async () => {
    const all = await rows();
    assert.ok(all.length >= 15, `${all.length} lines`);
    for (const row of all) assert.ok(row.proofs.length > 0, `no proof named for: ${row.line}`);
  });

  test("every proof names a test file of test/integration that holds its words", async () => {
    const files = new Map<string, string>();
    for (const row of await rows()) {
      for (const [file, words] of row.proofs) {
        if (!files.has(file)) files.set(file, await readFile(join(root, "test", "integration", file), "utf8"));
        assert.ok(files.get(file)?.includes(words), `${file} has no "${words}" (for: ${row.line})`);
      }
    }
  });
});

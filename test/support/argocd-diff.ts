/**
 * An external diff for `kubectl diff` (KUBECTL_EXTERNAL_DIFF) that compares what Argo CD compares: the
 * objects without `status` (Argo CD ignores the status of custom resources by default,
 * `ignoreResourceStatusField: crd`) and without `metadata.resourceVersion`. kubectl reads the live object and
 * asks for the dry-run result in two requests; a status write by the controller between them changes both
 * fields, which is not drift. Called as `node argocd-diff.js LIVE_DIR MERGED_DIR`; prints a unified diff and
 * exits 1 on a difference, 0 on none, as diff does.
 */
import { spawnSync } from "node:child_process";
import { existsSync, mkdtempSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { basename, join } from "node:path";
import { dumpYaml, loadYaml } from "@kubernetes/client-node";

/** The object as Argo CD diffs it. */
export function comparable(text: string): string {
  const object = loadYaml<Record<string, unknown> | null>(text);
  if (object === null || typeof object !== "object") return text;
  delete object["status"];
  const metadata = object["metadata"] as Record<string, unknown> | undefined;
  if (metadata) delete metadata["resourceVersion"];
  return dumpYaml(object);
}

function normalised(dir: string, names: string[]): string {
  const out = join(mkdtempSync(join(tmpdir(), "argocd-diff-")), basename(dir));
  spawnSync("mkdir", ["-p", out]);
  for (const name of names) {
    const file = join(dir, name);
    if (existsSync(file)) writeFileSync(join(out, name), comparable(readFileSync(file, "utf8")));
  }
  return out;
}

const [live, merged] = process.argv.slice(2);
if (live !== undefined && merged !== undefined) {
  const names = [...new Set([...readdirSync(live), ...readdirSync(merged)])];
  const result = spawnSync("diff", ["-u", "-N", normalised(live, names), normalised(merged, names)], {
    stdio: "inherit",
  });
  process.exit(result.status ?? 2);
}

import { mkdir, writeFile } from "node:fs/promises";
import { availableParallelism } from "node:os";
import { dirname, join } from "node:path";
import { format, resolveConfig } from "prettier";
import { findRepoRoot } from "../e2e/cluster/toolchain.js";

/** Where a benchmark's JSON goes: the file named by `envKey`, else bench/results/<kind>-<date>.json. */
export function resultsPath(kind: string, date: string, envKey: string): string {
  return process.env[envKey] ?? join(findRepoRoot(), "bench", "results", `${kind}-${date.slice(0, 10)}.json`);
}

/** The machine a run was measured on, recorded with its figures so that runs can be compared. */
export function machine(): { cpus: number; node: string } {
  return { cpus: availableParallelism(), node: process.version };
}

/**
 * Writes `figures` as JSON formatted as the repository's other files are (so a committed result passes
 * `make lint`); one file per kind and day, a later run the same day replaces it.
 */
export async function writeResults(path: string, figures: unknown): Promise<void> {
  await mkdir(dirname(path), { recursive: true });
  const options = (await resolveConfig(path)) ?? {};
  await writeFile(path, await format(JSON.stringify(figures), { ...options, filepath: path }));
}

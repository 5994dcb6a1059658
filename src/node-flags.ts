/**
 * The Node/V8 flags the controller process runs with, in one place: the image's ENTRYPOINT (Dockerfile) and
 * every test and bench that spawns the controller use them, so what is measured is what ships (ADR 0017).
 * A controller spends its time waiting on the API server, not in hot loops, so each trades a little speed
 * for memory (measured at 20 apps at rest, in ADR 0017):
 *
 * - `--optimize-for-size`: smaller heaps and code (14 MiB less at 20 apps). The old generation grows by small
 *   steps, so loading 5,000 apps' caches takes 8–9 full collections (lists read as they arrive, ADR 0019).
 * - `--max-opt=1`: the interpreter and the baseline compiler only; the optimising compilers (Maglev,
 *   TurboFan) are never loaded: about 9 MiB less RSS, about 18 % more CPU while 300 apps converge.
 *   (`--jitless` saves a little more but drops WebAssembly, which Node's fetch needs; `--lite-mode` implies it.)
 * - `--no-node-snapshot`: Node bootstraps from its built-in modules instead of its start-up snapshot; about
 *   4 MiB less RSS for about 40 ms more start-up.
 * - `--single-threaded`: no V8 background threads (garbage collection and compilation run on the main
 *   thread), so none of their allocator arenas. Loading 5,000 apps' caches takes as long with it as without
 *   (`node dist/bench/ingest.js 5000`: 1.72 and 1.73 s).
 */
export const DEFAULT_CONTROLLER_NODE_FLAGS: readonly string[] = [
  "--optimize-for-size",
  "--max-opt=1",
  "--no-node-snapshot",
  "--single-threaded",
];

/** The flags for a spawned controller: $CONTROLLER_NODE_FLAGS (space-separated, may be empty) or the default. */
export function controllerNodeFlags(env: Record<string, string | undefined> = process.env): string[] {
  const override = env.CONTROLLER_NODE_FLAGS;
  if (override === undefined) return [...DEFAULT_CONTROLLER_NODE_FLAGS];
  return override.split(/\s+/).filter((flag) => flag !== "");
}

/**
 * The V8 flags the controller process runs with, in one place: the image's ENTRYPOINT (Dockerfile) and
 * every test and bench that spawns the controller use them, so what is measured is what ships (ADR 0017).
 *
 * `--optimize-for-size` trades a little peak speed for smaller heaps and code; a controller spends its time
 * waiting on the API server, not in hot loops. (`--lite-mode` was measured too and rejected: it turns the
 * optimising compiler off and costs far more CPU.)
 */
export const DEFAULT_CONTROLLER_NODE_FLAGS: readonly string[] = ["--optimize-for-size"];

/** The flags for a spawned controller: $CONTROLLER_NODE_FLAGS (space-separated, may be empty) or the default. */
export function controllerNodeFlags(env: Record<string, string | undefined> = process.env): string[] {
  const override = env.CONTROLLER_NODE_FLAGS;
  if (override === undefined) return [...DEFAULT_CONTROLLER_NODE_FLAGS];
  return override.split(/\s+/).filter((flag) => flag !== "");
}

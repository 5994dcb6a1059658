import type { ResolvedSpec } from "../api/defaults.js";
import type { CanaryApp, MetricResult } from "../api/types.js";
import { scoreCheck } from "../rollout/analysis.js";
import type { RenderedCheck } from "../rollout/checks.js";
import type { QueryRunner } from "./ports.js";

/**
 * Runs one analysis: the checks the planner rendered for this app, against the app's Prometheus, each
 * outcome judged by the planner's pure scoring. One result per check, in the planner's order.
 */
export async function runAnalysis(
  app: CanaryApp,
  spec: ResolvedSpec,
  checks: readonly RenderedCheck[],
  runQueries: QueryRunner,
): Promise<MetricResult[]> {
  const outcomes = await runQueries(
    app,
    spec,
    checks.map((check) => check.query),
  );
  return checks.map((check, i) =>
    scoreCheck(check, outcomes[i] ?? { kind: "error", message: "the query runner returned no outcome" }),
  );
}

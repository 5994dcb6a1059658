import type { ResolvedSpec } from "../api/defaults.js";
import type { CanaryApp, MetricResult } from "../api/types.js";
import { scoreCheck } from "../rollout/analysis.js";
import { analysisChecks } from "../rollout/checks.js";
import { renderQuery, templateVars } from "../rollout/templates.js";
import type { QueryRunner } from "./ports.js";

/**
 * Runs one analysis: the spec's checks rendered for this app (an unknown template variable throws an
 * InvalidSpecError before anything is queried), their queries against the app's Prometheus, each outcome
 * judged by the planner's pure scoring. One result per check, in the planner's order.
 */
export async function runAnalysis(
  app: CanaryApp,
  spec: ResolvedSpec,
  runQueries: QueryRunner,
): Promise<MetricResult[]> {
  const checks = analysisChecks(spec);
  const vars = templateVars(app, spec);
  const queries = checks.map((check) => renderQuery(check.query, vars));
  const outcomes = await runQueries(app, spec, queries);
  return checks.map((check, i) =>
    scoreCheck(check, outcomes[i] ?? { kind: "error", message: "the query runner returned no outcome" }),
  );
}

import type { CanaryApp, MetricResult } from "../api/types.js";
import type { AnalysisProvider } from "../analysis/providers/analysis-provider.js";
import { scoreAnalysis } from "../analysis/verdicts.js";
import type { AnalysisCheck } from "../analysis/checks.js";

/**
 * Runs one analysis: the checks the planner rendered for this app, through the judge, each outcome judged
 * by the planner's pure scoring. One result per check, in the planner's order.
 */
export async function runAnalysis(
  app: CanaryApp,
  checks: readonly AnalysisCheck[],
  provider: AnalysisProvider,
): Promise<MetricResult[]> {
  const outcomes = await provider.run(app, checks);
  return scoreAnalysis(checks, outcomes);
}

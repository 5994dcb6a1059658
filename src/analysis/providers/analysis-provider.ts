/**
 * The judge's port: whatever runs the checks of an analysis. Prometheus runs the queries (prometheus.ts, with
 * what only it uses in prometheus/), webhooks the `webhook` checks (webhook.ts); by-mode.ts sends each check to
 * the provider of its mode. Each runs the kinds of `AnalysisCheck` (analysis/checks.ts) it knows.
 */
import type { CanaryApp } from "../../api/types.js";
import type { AnalysisCheck } from "../checks.js";
import type { QueryOutcome } from "../outcome.js";

export interface AnalysisProvider {
  /**
   * Runs `checks` (rendered for `app`) and resolves one raw outcome a check, in order; the planner judges
   * them. A check that cannot be answered resolves `{ kind: "error" }`; only trouble that retrying may
   * fix (such as a Secret that could not be read) rejects.
   */
  run(app: CanaryApp, checks: readonly AnalysisCheck[]): Promise<QueryOutcome[]>;
}

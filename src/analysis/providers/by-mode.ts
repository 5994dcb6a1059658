import type { AnalysisProvider } from "./analysis-provider.js";
import type { CheckMode } from "../checks.js";
import { routeChecks } from "./route-checks.js";

/**
 * One AnalysisProvider over several: each check goes to the provider of its mode (webhooks to one, queries
 * to another), and the outcomes come back in the checks' order. Providers run side by side.
 */
export function analysisByMode(
  providers: Partial<Record<CheckMode, AnalysisProvider>>,
  fallback: AnalysisProvider,
): AnalysisProvider {
  return routeChecks((check) => providers[check.mode] ?? fallback, "the analysis provider returned no outcome");
}

import type { MetricProviderType } from "../../api/types.js";
import type { AnalysisProvider } from "./analysis-provider.js";
import { routeChecks } from "./route-checks.js";

/**
 * One AnalysisProvider over the metric sources: each check goes to the provider of its `provider.type`
 * (Datadog, New Relic, …); a check with no provider, or one of a type without its own (`prometheus`), goes to
 * `fallback`, the app's Prometheus. Outcomes come back in the checks' order; providers run side by side.
 */
export function analysisByProvider(
  providers: Partial<Record<MetricProviderType, AnalysisProvider>>,
  fallback: AnalysisProvider,
): AnalysisProvider {
  return routeChecks((check) => {
    const type = check.provider?.type;
    return (type === undefined ? undefined : providers[type]) ?? fallback;
  }, "the metric provider returned no outcome");
}

import type { MetricProviderType } from "../../api/types.js";
import type { AnalysisProvider } from "./analysis-provider.js";
import type { AnalysisCheck } from "../checks.js";
import type { QueryOutcome } from "../outcome.js";

/**
 * One AnalysisProvider over the metric sources: each check goes to the provider of its `provider.type`
 * (Datadog, New Relic, …); a check with no provider, or one of a type without its own (`prometheus`), goes to
 * `fallback`, the app's Prometheus. Outcomes come back in the checks' order; providers run side by side.
 */
export function analysisByProvider(
  providers: Partial<Record<MetricProviderType, AnalysisProvider>>,
  fallback: AnalysisProvider,
): AnalysisProvider {
  return {
    run: async (app, checks) => {
      const groups = new Map<AnalysisProvider, { index: number; check: AnalysisCheck }[]>();
      checks.forEach((check, index) => {
        const type = check.provider?.type;
        const provider = (type === undefined ? undefined : providers[type]) ?? fallback;
        const group = groups.get(provider) ?? [];
        group.push({ index, check });
        groups.set(provider, group);
      });
      const outcomes: QueryOutcome[] = checks.map(() => ({ kind: "error", message: "not run" }));
      await Promise.all(
        [...groups].map(async ([provider, group]) => {
          const answers = await provider.run(
            app,
            group.map((g) => g.check),
          );
          group.forEach((g, i) => {
            outcomes[g.index] = answers[i] ?? { kind: "error", message: "the metric provider returned no outcome" };
          });
        }),
      );
      return outcomes;
    },
  };
}

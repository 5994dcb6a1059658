import type { AnalysisProvider } from "./analysis-provider.js";
import type { AnalysisCheck, CheckMode } from "../checks.js";
import type { QueryOutcome } from "../outcome.js";

/**
 * One AnalysisProvider over several: each check goes to the provider of its mode (webhooks to one, queries
 * to another), and the outcomes come back in the checks' order. Providers run side by side.
 */
export function analysisByMode(
  providers: Partial<Record<CheckMode, AnalysisProvider>>,
  fallback: AnalysisProvider,
): AnalysisProvider {
  return {
    run: async (app, checks) => {
      const groups = new Map<AnalysisProvider, { index: number; check: AnalysisCheck }[]>();
      checks.forEach((check, index) => {
        const provider = providers[check.mode] ?? fallback;
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
            outcomes[g.index] = answers[i] ?? { kind: "error", message: "the analysis provider returned no outcome" };
          });
        }),
      );
      return outcomes;
    },
  };
}

import type { AnalysisProvider } from "./analysis-provider.js";
import type { AnalysisCheck } from "../checks.js";
import type { QueryOutcome } from "../outcome.js";

/**
 * One AnalysisProvider over several: each check goes to the provider `pick` names for it, the providers run
 * side by side, and the outcomes come back in the checks' order. A provider that answers fewer outcomes than it
 * was given checks leaves the rest an error saying so (`missing`).
 */
export function routeChecks(pick: (check: AnalysisCheck) => AnalysisProvider, missing: string): AnalysisProvider {
  return {
    run: async (app, checks) => {
      const groups = new Map<AnalysisProvider, { index: number; check: AnalysisCheck }[]>();
      checks.forEach((check, index) => {
        const provider = pick(check);
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
            outcomes[g.index] = answers[i] ?? { kind: "error", message: missing };
          });
        }),
      );
      return outcomes;
    },
  };
}

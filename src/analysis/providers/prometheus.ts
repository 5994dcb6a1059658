/**
 * The Prometheus provider: every check is a PromQL query against the app's own Prometheus. What only it uses
 * is in prometheus/: the connection pool (factory.ts), the HTTP client (client.ts) with its errors, retries and
 * results, and the controller's rules for reaching an app's Prometheus (access.ts).
 */
import type { CanaryApp } from "../../api/types.js";
import type { AnalysisProvider } from "./analysis-provider.js";
import { PrometheusError } from "./prometheus/errors.js";
import type { SecretReader } from "./credentials.js";
import type { ProviderDefaults, ProviderPool } from "./prometheus/factory.js";
import { providerFor } from "./prometheus/factory.js";
import { shortText, STATUS_MESSAGE_MAX } from "./message-text.js";
import type { CheckOutcome } from "./prometheus/provider.js";
import { errorOutcome, runChecks, type RangeQuery } from "./prometheus/runner.js";
import type { AnalysisCheck } from "../checks.js";
import type { QueryOutcome } from "../outcome.js";

/** What the Prometheus judge needs: the controller's defaults, a Secret reader and the connection pool. */
export interface PrometheusAnalysisOptions {
  defaults: ProviderDefaults;
  readSecret: SecretReader;
  pool?: ProviderPool;
}

/**
 * Runs PromQL against the app's own Prometheus (its URL, auth and timeout), one outcome per query, in
 * order. Never rejects for the connection settings: when they cannot work (no URL, a missing Secret), every
 * query's outcome is an error with reason `PrometheusConfigInvalid` whose message names the app and the
 * setting, so the problem shows up in the analysis the user sees. A failure to read the Secret is thrown,
 * to be retried.
 */
export async function runAppQueries(
  app: CanaryApp,
  queries: readonly (string | RangeQuery)[],
  { defaults, readSecret, pool }: PrometheusAnalysisOptions,
): Promise<CheckOutcome[]> {
  let provider;
  try {
    provider = await providerFor(app, defaults, readSecret, pool);
  } catch (err) {
    // Anything else (the Secret could not be read) is transient: the reconcile is retried with backoff.
    if (!(err instanceof PrometheusError)) throw err;
    const outcome = errorOutcome(err);
    return queries.map(() => outcome);
  }
  return (await runChecks(provider, queries)).map(forStatus);
}

/**
 * An outcome as it may be shown to the app's authors: an error's message is printable and short, whatever
 * the server put in its error text (the full message is in the controller's log).
 */
function forStatus(outcome: CheckOutcome): CheckOutcome {
  return outcome.kind === "error" ? { ...outcome, message: shortText(outcome.message, STATUS_MESSAGE_MAX) } : outcome;
}

/**
 * The app as seen by a check whose `provider` names another server with Prometheus' API (Thanos, Mimir,
 * VictoriaMetrics): its `address` in place of `spec.prometheusURL` and its `secretRef` in place of the app's,
 * so that the same rules (URL policy, the Secret's label and `canaryapp.io/allowed-urls`) judge it.
 */
function appFor(app: CanaryApp, check: AnalysisCheck): CanaryApp {
  const provider = check.provider;
  if (provider?.address === undefined) return app;
  const { secretRef: _appSecret, ...prometheus } = app.spec.prometheus ?? {};
  return {
    ...app,
    spec: {
      ...app.spec,
      prometheusURL: provider.address,
      prometheus: { ...prometheus, ...(provider.secretRef !== undefined && { secretRef: provider.secretRef }) },
    },
  };
}

/** A message about an app seen through `appFor`, naming the check's settings rather than the app's. */
function aboutProvider(outcome: QueryOutcome): QueryOutcome {
  if (outcome.kind !== "error") return outcome;
  const message = outcome.message
    .replaceAll("spec.prometheusURL", "provider.address")
    .replaceAll("spec.prometheus.secretRef", "provider.secretRef");
  return { ...outcome, message };
}

/**
 * Prometheus as the AnalysisProvider: every check is a PromQL query, against the app's Prometheus or the
 * `provider.address` it names; a check with a `range` is a range query answered with samples.
 */
export function prometheusAnalysis(options: PrometheusAnalysisOptions): AnalysisProvider {
  return {
    run: async (app, checks) => {
      const groups = new Map<string, { app: CanaryApp; indexes: number[] }>();
      checks.forEach((check, index) => {
        const key = JSON.stringify([check.provider?.address ?? null, check.provider?.secretRef?.name ?? null]);
        const group = groups.get(key) ?? { app: appFor(app, check), indexes: [] };
        group.indexes.push(index);
        groups.set(key, group);
      });
      const outcomes: QueryOutcome[] = checks.map(() => ({ kind: "error", message: "not run" }));
      await Promise.all(
        [...groups.values()].map(async (group) => {
          const queries = group.indexes.map((i): string | RangeQuery => {
            const check = checks[i] as AnalysisCheck;
            return check.range === undefined ? check.query : { query: check.query, range: check.range };
          });
          const answers = await runAppQueries(group.app, queries, options);
          group.indexes.forEach((index, i) => {
            const answer = answers[i] ?? { kind: "error", message: "no outcome" };
            outcomes[index] = group.app === app ? answer : aboutProvider(answer);
          });
        }),
      );
      return outcomes;
    },
  };
}

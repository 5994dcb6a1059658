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
import { errorOutcome, runChecks } from "./prometheus/runner.js";

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
  queries: readonly string[],
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

/** Prometheus as the AnalysisProvider: every check is a PromQL query. */
export function prometheusAnalysis(options: PrometheusAnalysisOptions): AnalysisProvider {
  return {
    run: (app, checks) =>
      runAppQueries(
        app,
        checks.map((check) => check.query),
        options,
      ),
  };
}

import type { CanaryApp } from "../api/types.js";
import { PrometheusError } from "./errors.js";
import { providerFor, type ProviderDefaults, type SecretReader } from "./factory.js";
import { shortText } from "./prometheus.js";
import type { CheckOutcome } from "./provider.js";
import { errorOutcome, runChecks } from "./runner.js";

/** Runs an app's rendered queries against the app's own Prometheus; one outcome per query, in order. */
export type AppQueryRunner = (app: CanaryApp, spec: unknown, queries: string[]) => Promise<CheckOutcome[]>;

/**
 * The reconciler's query port: picks (or reuses) the app's provider and runs the checks. Never rejects:
 * when the connection settings cannot work (no URL, a missing Secret), every query's outcome is an error
 * with reason `PrometheusConfigInvalid` whose message names the app and the setting, so the problem shows
 * up in the analysis the user sees. A failure to read the Secret is thrown, to be retried. `spec` is accepted for the port's shape; the settings are read from `app`.
 */
export function createQueryRunner(defaults: ProviderDefaults, readSecret: SecretReader): AppQueryRunner {
  return async (app, _spec, queries) => {
    let provider;
    try {
      provider = await providerFor(app, defaults, readSecret);
    } catch (err) {
      // Anything else (the Secret could not be read) is transient: the reconcile is retried with backoff.
      if (!(err instanceof PrometheusError)) throw err;
      const outcome = errorOutcome(err);
      return queries.map(() => outcome);
    }
    return (await runChecks(provider, queries)).map(forStatus);
  };
}

/** Longest error message an outcome carries into status and Events. */
export const STATUS_MESSAGE_MAX = 240;

/**
 * An outcome as it may be shown to the app's authors: an error's message is printable and short, whatever
 * the server put in its error text (the full message is in the controller's log).
 */
function forStatus(outcome: CheckOutcome): CheckOutcome {
  return outcome.kind === "error" ? { ...outcome, message: shortText(outcome.message, STATUS_MESSAGE_MAX) } : outcome;
}

import type { CanaryApp } from "../api/types.js";
import type { ProviderDefaults, ProviderPool, SecretReader } from "./factory.js";
import { runAppQueries } from "./prometheus-analysis.js";
import type { CheckOutcome } from "./provider.js";

/** Runs an app's rendered queries against the app's own Prometheus; one outcome per query, in order. */
export type AppQueryRunner = (app: CanaryApp, spec: unknown, queries: string[]) => Promise<CheckOutcome[]>;

/**
 * The queries of an app as one function (see `runAppQueries`); `spec` is accepted for the old port's shape.
 * The controller uses `prometheusAnalysis` (the AnalysisProvider); this stays for callers of the function.
 */
export function createQueryRunner(
  defaults: ProviderDefaults,
  readSecret: SecretReader,
  pool?: ProviderPool,
): AppQueryRunner {
  return (app, _spec, queries) => runAppQueries(app, queries, { defaults, readSecret, ...(pool ? { pool } : {}) });
}

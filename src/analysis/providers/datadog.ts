/**
 * Datadog as a metric source: the metrics query API v1, `GET /api/v1/query?from&to&query`, authenticated by
 * the `DD-API-KEY` and `DD-APPLICATION-KEY` headers from the Secret's `apiKey` and `applicationKey`
 * (https://docs.datadoghq.com/api/latest/metrics/#query-timeseries-points). The address is the US1 site's
 * API unless the check names its site's (`https://api.datadoghq.eu`, …).
 */
import type { AnalysisProvider } from "./analysis-provider.js";
import {
  durationSeconds,
  epochSeconds,
  instantOutcome,
  samplesOutcome,
  SourceError,
  sourceAnalysis,
  type SourceAccess,
  type SourceKind,
} from "./metric-source.js";

/** The API of Datadog's US1 site. */
export const DATADOG_DEFAULT_ADDRESS = "https://api.datadoghq.com";

/** Secret keys. */
export const DATADOG_KEYS = { apiKey: "apiKey", applicationKey: "applicationKey" } as const;

/** The window of an instant check that names none: its last point is its value. */
const DEFAULT_WINDOW_SECONDS = 300;

/** The parts of the v1 query answer that are read. */
interface QueryAnswer {
  status?: string;
  error?: string;
  series?: { scope?: string; expression?: string; pointlist?: [number, number | null][] }[];
}

export const datadogSource: SourceKind = {
  type: "datadog",
  label: "Datadog",
  defaultAddress: () => DATADOG_DEFAULT_ADDRESS,
  needsSecret: true,
  requiredKeys: [DATADOG_KEYS.apiKey, DATADOG_KEYS.applicationKey],
  query: async (source, check) => {
    const to = check.range ? epochSeconds(check.range.end) : epochSeconds(source.now());
    const from = check.range
      ? epochSeconds(check.range.start)
      : to - durationSeconds(check.window, DEFAULT_WINDOW_SECONDS);
    const params = new URLSearchParams({ from: String(from), to: String(to), query: check.query });
    const answer = (await source.call(`/api/v1/query?${params.toString()}`, {
      headers: {
        Accept: "application/json",
        "DD-API-KEY": source.secret(DATADOG_KEYS.apiKey) ?? "",
        "DD-APPLICATION-KEY": source.secret(DATADOG_KEYS.applicationKey) ?? "",
      },
    })) as QueryAnswer;
    if (answer.status === "error") throw new SourceError(answer.error ?? "the query failed");
    if (!Array.isArray(answer.series)) throw new SourceError("the answer has no series");
    // A point is [milliseconds, value]; a bucket with no data is null.
    const points = answer.series.map((s) =>
      (s.pointlist ?? []).map(([, v]) => v).filter((v): v is number => typeof v === "number"),
    );
    if (check.range) return samplesOutcome(points);
    const last = answer.series
      .map((s, i) => ({ label: s.scope ?? s.expression ?? String(i), value: points[i]?.at(-1) }))
      .filter((s): s is { label: string; value: number } => s.value !== undefined);
    return instantOutcome(last);
  },
};

/** Datadog as the AnalysisProvider of the checks whose `provider.type` is `datadog`. */
export function datadogAnalysis(access: SourceAccess): AnalysisProvider {
  return sourceAnalysis(datadogSource, access);
}

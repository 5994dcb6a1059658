/**
 * InfluxDB as a metric source: InfluxQL through `GET /query?db&q&epoch=s`, the 1.x API that InfluxDB 2 also
 * serves (https://docs.influxdata.com/influxdb/v1/tools/api/#query-http-endpoint,
 * https://docs.influxdata.com/influxdb/v2/api-guide/influxdb-1x/query/). The database is `provider.database`;
 * credentials are the Secret's `token` (`Authorization: Token …`) or `username` and `password` (basic auth).
 *
 * Time is given to the query as Grafana gives it: `$timeFilter` becomes the time condition (the check's window
 * up to now, or a judged check's range) and `$interval` the step, so that a judged query reads
 * `SELECT mean("value") FROM "latency" WHERE $timeFilter GROUP BY time($interval)`.
 */
import type { AnalysisProvider } from "./analysis-provider.js";
import {
  durationSeconds,
  seriesOutcome,
  SourceError,
  sourceAnalysis,
  type SourceAccess,
  type SourceKind,
} from "./metric-source.js";
import type { AnalysisCheck } from "../checks.js";

export const INFLUXDB_KEYS = { token: "token", username: "username", password: "password" } as const;

/** The window of an instant check that names none. */
const DEFAULT_WINDOW_SECONDS = 300;

interface QueryAnswer {
  error?: string;
  results?: {
    error?: string;
    series?: { name?: string; tags?: Record<string, string>; columns?: string[]; values?: unknown[][] }[];
  }[];
}

/** The check's InfluxQL with `$timeFilter` and `$interval` filled in. */
export function influxQL(check: AnalysisCheck): string {
  const { range } = check;
  if (range === undefined) {
    const window = durationSeconds(check.window, DEFAULT_WINDOW_SECONDS);
    return check.query.replaceAll("$timeFilter", `time > now() - ${window}s`);
  }
  if (!check.query.includes("$timeFilter")) {
    throw new SourceError("a judged InfluxQL query must have WHERE $timeFilter (and GROUP BY time($interval))");
  }
  const start = new Date(range.start).toISOString();
  const end = new Date(range.end).toISOString();
  return check.query
    .replaceAll("$timeFilter", `time >= '${start}' AND time <= '${end}'`)
    .replaceAll("$interval", `${range.stepSeconds}s`);
}

export const influxDbSource: SourceKind = {
  type: "influxdb",
  label: "InfluxDB",
  query: async (source, check) => {
    const database = check.provider?.database;
    if (database === undefined) throw new SourceError("provider.database is required");
    const params = new URLSearchParams({ db: database, q: influxQL(check), epoch: "s" });
    const headers: Record<string, string> = { Accept: "application/json" };
    const token = source.secret(INFLUXDB_KEYS.token);
    const username = source.secret(INFLUXDB_KEYS.username);
    if (token) headers.Authorization = `Token ${token}`;
    else if (username !== undefined) {
      const pair = `${username}:${source.secret(INFLUXDB_KEYS.password) ?? ""}`;
      headers.Authorization = `Basic ${Buffer.from(pair, "utf8").toString("base64")}`;
    }
    const answer = (await source.call(`/query?${params.toString()}`, { headers })) as QueryAnswer;
    const [result] = answer.results ?? [];
    const error = answer.error ?? result?.error;
    if (error !== undefined) throw new SourceError(error);
    if (result === undefined) throw new SourceError("the answer has no result");
    // Each series' figure is its first column that is not the time.
    const series = (result.series ?? []).map((s) => {
      const column = (s.columns ?? []).findIndex((c) => c !== "time");
      const values = (s.values ?? []).map((row) => row[column]).filter((v): v is number => typeof v === "number");
      const tags = Object.entries(s.tags ?? {}).map(([k, v]) => `${k}=${JSON.stringify(v)}`);
      return { label: `${s.name ?? ""}{${tags.join(", ")}}`, values };
    });
    return seriesOutcome(check, series);
  },
};

/** InfluxDB as the AnalysisProvider of the checks whose `provider.type` is `influxdb`. */
export function influxDbAnalysis(access: SourceAccess): AnalysisProvider {
  return sourceAnalysis(influxDbSource, access);
}

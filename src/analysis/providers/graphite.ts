/**
 * Graphite as a metric source: the render API, `GET /render?target&from&until&format=json`
 * (https://graphite.readthedocs.io/en/latest/render_api.html), with HTTP basic auth when the check names a
 * Secret with `username` and `password`. `provider.address` is required (Graphite has no default place).
 * An instant check's value is each series' latest non-null datapoint over its window; a judged check gets
 * the one series' datapoints from start to until, at the series' own resolution (`summarize()` in the
 * target sets another).
 */
import type { AnalysisProvider } from "./analysis-provider.js";
import {
  durationSeconds,
  epochSeconds,
  seriesOutcome,
  SourceError,
  sourceAnalysis,
  type SourceAccess,
  type SourceKind,
} from "./metric-source.js";

export const GRAPHITE_KEYS = { username: "username", password: "password" } as const;

/** The window of an instant check that names none. */
const DEFAULT_WINDOW_SECONDS = 300;

/** One series of the render API's JSON: `datapoints` are [value or null, epoch seconds]. */
interface RenderedSeries {
  target?: string;
  datapoints?: [number | null, number][];
}

export const graphiteSource: SourceKind = {
  type: "graphite",
  label: "Graphite",
  query: async (source, check) => {
    const until = check.range ? epochSeconds(check.range.end) : epochSeconds(source.now());
    // Graphite's `from` is exclusive: whisper starts at the slot after it (whisper.py's fetch rounds
    // `fromTime - fromTime % step + step`), so a range's first sample is asked from one second before.
    const from = check.range
      ? epochSeconds(check.range.start) - 1
      : until - durationSeconds(check.window, DEFAULT_WINDOW_SECONDS);
    const params = new URLSearchParams({
      target: check.query,
      from: String(from),
      until: String(until),
      format: "json",
    });
    const headers: Record<string, string> = { Accept: "application/json" };
    const username = source.secret(GRAPHITE_KEYS.username);
    if (username !== undefined) {
      const pair = `${username}:${source.secret(GRAPHITE_KEYS.password) ?? ""}`;
      headers.Authorization = `Basic ${Buffer.from(pair, "utf8").toString("base64")}`;
    }
    const answer = await source.call(`/render?${params.toString()}`, { headers });
    if (!Array.isArray(answer)) throw new SourceError("the answer is not a list of series");
    const series = (answer as RenderedSeries[]).map((s) => ({
      label: s.target ?? "",
      values: (s.datapoints ?? []).map(([v]) => v).filter((v): v is number => typeof v === "number"),
    }));
    return seriesOutcome(check, series);
  },
};

/** Graphite as the AnalysisProvider of the checks whose `provider.type` is `graphite`. */
export function graphiteAnalysis(access: SourceAccess): AnalysisProvider {
  return sourceAnalysis(graphiteSource, access);
}

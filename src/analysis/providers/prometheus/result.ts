/**
 * Turning an instant query's result into numbers. Pure: the HTTP side is in client.ts.
 */
import { UnexpectedResultError } from "./errors.js";
import type { DataOutcome } from "./provider.js";

/** The parts of prometheus-query's `QueryResult` that are read here. */
export interface InstantResult {
  resultType: string;
  /** scalar: the raw `[time, "value"]`; vector: `{ value: { value: number } }` per series. */
  result: unknown;
}

/**
 * Parses a sample value as Prometheus writes it. Go's float formatting spells infinities "+Inf"/"-Inf",
 * which `parseFloat` reads as NaN — and a p99 in the +Inf bucket must stay "too slow", not become "unknown".
 */
export function parsePrometheusFloat(raw: string): number {
  switch (raw) {
    case "+Inf":
    case "Inf":
      return Infinity;
    case "-Inf":
      return -Infinity;
    case "NaN":
      return NaN;
    default: {
      const value = raw.trim() === "" ? NaN : Number(raw);
      if (Number.isNaN(value)) throw new Error(`not a number: "${raw}"`);
      return value;
    }
  }
}

/**
 * Rewrites "+Inf"/"-Inf" sample values in a raw `/api/v1/query` body to spellings that `parseFloat` reads
 * correctly ("Infinity"), so that the driver's own parsing of vectors keeps infinities. Mutates `body`.
 */
export function respellInfinities(body: unknown): void {
  const data = (body as { data?: { resultType?: unknown; result?: unknown } } | null)?.data;
  if (!data || !Array.isArray(data.result)) return;
  const respell = (sample: unknown) => {
    if (!Array.isArray(sample)) return;
    if (sample[1] === "+Inf" || sample[1] === "Inf") sample[1] = "Infinity";
    else if (sample[1] === "-Inf") sample[1] = "-Infinity";
  };
  if (data.resultType === "scalar") return; // parsed here with parsePrometheusFloat, not by the driver
  for (const series of data.result as unknown[]) {
    if (typeof series !== "object" || series === null) continue;
    respell((series as { value?: unknown }).value);
    const values = (series as { values?: unknown }).values;
    if (Array.isArray(values)) values.forEach(respell);
  }
}

/** A series' labels as PromQL writes them, sorted: `{pod="a", zone="b"}` (`__name__` left out). */
export function seriesLabels(series: unknown): string {
  const labels = (series as { metric?: { labels?: unknown } } | null)?.metric?.labels;
  if (typeof labels !== "object" || labels === null) return "{}";
  const parts = Object.entries(labels as Record<string, unknown>)
    .filter(([name]) => name !== "__name__")
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
    .map(([name, value]) => `${name}=${JSON.stringify(String(value))}`);
  return `{${parts.join(", ")}}`;
}

/**
 * scalar → `value`; a vector of one series → `value`; of several → `values`; an empty vector → `empty`.
 * A matrix or a string is not something a check can judge: `UnexpectedResultError`.
 */
export function toOutcome(result: InstantResult, endpoint: string): DataOutcome {
  const unexpected = (detail: string) =>
    new UnexpectedResultError(`Prometheus ${endpoint}: ${detail}`, { errorType: result.resultType });
  switch (result.resultType) {
    case "scalar": {
      const raw = Array.isArray(result.result) ? (result.result[1] as unknown) : undefined;
      if (typeof raw !== "string") throw unexpected("scalar result without a value");
      try {
        return { kind: "value", value: parsePrometheusFloat(raw) };
      } catch (err) {
        throw unexpected(`scalar result: ${(err as Error).message}`);
      }
    }
    case "vector": {
      if (!Array.isArray(result.result)) throw unexpected("vector result without a list of series");
      const series = result.result as unknown[];
      const values = series.map((one) => {
        const value = (one as { value?: { value?: unknown } } | null)?.value?.value;
        if (typeof value !== "number") throw unexpected("vector result with a series without a value");
        return value;
      });
      const [first] = values;
      if (first === undefined) return { kind: "empty" };
      if (values.length === 1) return { kind: "value", value: first };
      const labels = series.map(seriesLabels);
      // Series without labels (an aggregate) have nothing to be named by but their place.
      return labels.some((l) => l !== "{}") ? { kind: "values", values, labels } : { kind: "values", values };
    }
    default:
      throw unexpected(`the query returned a ${result.resultType}, not a scalar or an instant vector`);
  }
}

/**
 * A range query's matrix as a judged metric's samples: the one series' values in time order (NaN left out:
 * a step with no requests has no latency); no series → `empty`. Several series cannot be one track's.
 */
export function toSamples(result: InstantResult, endpoint: string): DataOutcome {
  const unexpected = (detail: string) =>
    new UnexpectedResultError(`Prometheus ${endpoint}: ${detail}`, { errorType: result.resultType });
  if (result.resultType !== "matrix" || !Array.isArray(result.result)) {
    throw unexpected(`the range query returned a ${result.resultType}, not a matrix`);
  }
  const series = result.result as { values?: { value?: unknown }[] }[];
  if (series.length === 0) return { kind: "empty" };
  if (series.length > 1)
    throw unexpected(`the range query returned ${series.length} series; a judged metric needs one`);
  const values = (series[0]?.values ?? []).map((sample) => sample.value);
  if (values.some((v) => typeof v !== "number")) throw unexpected("matrix result with a sample without a value");
  const samples = (values as number[]).filter((v) => !Number.isNaN(v));
  return samples.length === 0 ? { kind: "empty" } : { kind: "samples", values: samples };
}

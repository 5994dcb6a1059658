import type { CanaryApp, FailedImage } from "../api/types.js";

/** The name under which status records the seed-compatible spec.prometheusQuery (the controller's SEED_CHECK_NAME). */
const SEED_CHECK = "prometheusQuery";

/** The query that judged a failed image: the spec's query of the failed metric, when there was one. */
export function judgingQuery(app: CanaryApp, failed: FailedImage): string | undefined {
  if (failed.metric === undefined) return undefined;
  if (failed.metric === SEED_CHECK) return app.spec.prometheusQuery;
  const metric = app.spec.analysis?.metrics?.find((m) => m.name === failed.metric);
  if (metric === undefined) return undefined;
  return metric.query ?? `built-in Istio metric ${metric.name}`;
}

/** One row of `kubectl canaryapp history`. */
export interface HistoryRow {
  image: string;
  failedAt: string;
  reason: string;
  metric: string | undefined;
  value: number | undefined;
  query: string | undefined;
  message: string;
}

/** The failed images of an app, newest first, each with the query that judged it. */
export function historyRows(app: CanaryApp): HistoryRow[] {
  return (app.status?.failedImages ?? []).map((f) => ({
    image: f.image,
    failedAt: f.failedAt,
    reason: f.reason,
    metric: f.metric,
    value: f.value,
    query: judgingQuery(app, f),
    message: f.message,
  }));
}

/** Columns padded to their widest cell, as kubectl prints tables. */
export function table(header: string[], rows: string[][]): string {
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? "").length)));
  const line = (cells: string[]) =>
    cells
      .map((c, i) => (i === cells.length - 1 ? c : c.padEnd(widths[i] ?? 0)))
      .join("   ")
      .trimEnd();
  return [line(header), ...rows.map(line)].join("\n");
}

/** The history as a table; `wide` adds the controller's message. */
export function renderHistory(rows: HistoryRow[], wide: boolean): string {
  if (rows.length === 0) return "No failed images.";
  const header = ["IMAGE", "FAILED AT", "REASON", "METRIC", "VALUE", "QUERY", ...(wide ? ["MESSAGE"] : [])];
  return table(
    header,
    rows.map((r) => [
      r.image,
      r.failedAt,
      r.reason,
      r.metric ?? "-",
      r.value === undefined ? "-" : String(r.value),
      r.query ?? "-",
      ...(wide ? [r.message] : []),
    ]),
  );
}

/**
 * Amazon CloudWatch as a metric source: `GetMetricData`, the query being the JSON array of
 * MetricDataQueries (as Flagger's CloudWatch provider takes it), sent with the AWS JSON 1.0 protocol
 * (`X-Amz-Target: GraniteServiceVersion20100801.GetMetricData`) and signed with Signature Version 4 by the
 * `aws4` library (https://docs.aws.amazon.com/AmazonCloudWatch/latest/APIReference/API_GetMetricData.html).
 * The region is `provider.region`; the credentials are the Secret's `accessKeyId`, `secretAccessKey` and
 * optional `sessionToken`. `provider.address` replaces the regional endpoint (a VPC endpoint, a FIPS one).
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

export const CLOUDWATCH_KEYS = {
  accessKeyId: "accessKeyId",
  secretAccessKey: "secretAccessKey",
  sessionToken: "sessionToken",
} as const;

/** The regional endpoint, https://monitoring.<region>.amazonaws.com. */
export function cloudWatchEndpoint(region: string): string {
  return `https://monitoring.${region}.amazonaws.com`;
}

/** The JSON 1.0 target of the operation (the service's Smithy model, `GraniteServiceVersion20100801`). */
export const GET_METRIC_DATA_TARGET = "GraniteServiceVersion20100801.GetMetricData";

/** The window of an instant check that names none: its latest datapoint is its value. */
const DEFAULT_WINDOW_SECONDS = 300;

type MetricDataQuery = Record<string, unknown> & { MetricStat?: Record<string, unknown> };

interface GetMetricDataAnswer {
  MetricDataResults?: { Id?: string; Label?: string; Values?: number[]; StatusCode?: string }[];
  Messages?: { Code?: string; Value?: string }[];
}

/** The check's query as MetricDataQueries; a judged check's periods become its step. */
function metricDataQueries(query: string, stepSeconds: number | undefined): MetricDataQuery[] {
  let parsed: unknown;
  try {
    parsed = JSON.parse(query);
  } catch {
    throw new SourceError("the query is not a JSON array of MetricDataQueries");
  }
  if (!Array.isArray(parsed) || parsed.some((q) => typeof q !== "object" || q === null)) {
    throw new SourceError("the query is not a JSON array of MetricDataQueries");
  }
  const queries = parsed as MetricDataQuery[];
  if (stepSeconds === undefined) return queries;
  return queries.map((q) =>
    q.MetricStat !== undefined
      ? { ...q, MetricStat: { ...q.MetricStat, Period: stepSeconds } }
      : { ...q, Period: stepSeconds },
  );
}

export const cloudWatchSource: SourceKind = {
  type: "cloudwatch",
  label: "CloudWatch",
  defaultAddress: (spec) => (spec.region === undefined ? undefined : cloudWatchEndpoint(spec.region)),
  needsSecret: true,
  requiredKeys: [CLOUDWATCH_KEYS.accessKeyId, CLOUDWATCH_KEYS.secretAccessKey],
  query: async (source, check) => {
    const region = check.provider?.region;
    if (region === undefined) throw new SourceError("provider.region is required");
    const end = check.range ? epochSeconds(check.range.end) : epochSeconds(source.now());
    const start = check.range
      ? epochSeconds(check.range.start)
      : end - durationSeconds(check.window, DEFAULT_WINDOW_SECONDS);
    const body = JSON.stringify({
      MetricDataQueries: metricDataQueries(check.query, check.range?.stepSeconds),
      StartTime: start,
      EndTime: end,
      ScanBy: check.range ? "TimestampAscending" : "TimestampDescending",
    });
    const url = new URL(`${source.base}/`);
    const sessionToken = source.secret(CLOUDWATCH_KEYS.sessionToken);
    // Loaded at the first CloudWatch query, not at start-up (ADR 0017).
    const { default: aws4 } = await import("aws4");
    const signed = aws4.sign(
      {
        host: url.host,
        path: url.pathname,
        method: "POST",
        service: "monitoring",
        region,
        headers: { "Content-Type": "application/x-amz-json-1.0", "X-Amz-Target": GET_METRIC_DATA_TARGET },
        body,
      },
      {
        accessKeyId: source.secret(CLOUDWATCH_KEYS.accessKeyId) ?? "",
        secretAccessKey: source.secret(CLOUDWATCH_KEYS.secretAccessKey) ?? "",
        ...(sessionToken ? { sessionToken } : {}),
      },
    );
    const headers = Object.fromEntries(Object.entries(signed.headers ?? {}).map(([k, v]) => [k, String(v)]));
    const answer = (await source.call("/", { method: "POST", headers, body })) as GetMetricDataAnswer;
    const results = answer.MetricDataResults;
    if (!Array.isArray(results)) throw new SourceError("the answer has no MetricDataResults");
    if (check.range) return samplesOutcome(results.map((r) => r.Values ?? []));
    const latest = results
      .map((r) => ({ label: r.Label ?? r.Id ?? "", value: r.Values?.[0] }))
      .filter((r): r is { label: string; value: number } => typeof r.value === "number");
    return instantOutcome(latest);
  },
};

/** CloudWatch as the AnalysisProvider of the checks whose `provider.type` is `cloudwatch`. */
export function cloudWatchAnalysis(access: SourceAccess): AnalysisProvider {
  return sourceAnalysis(cloudWatchSource, access);
}

/**
 * New Relic as a metric source: NRQL through NerdGraph, `POST /graphql` with the `API-Key` header from the
 * Secret's `apiKey`, in the account `provider.accountId`
 * (https://docs.newrelic.com/docs/apis/nerdgraph/examples/nerdgraph-nrql-tutorial/). The address is the US
 * region's NerdGraph unless the check names the EU's (`https://api.eu.newrelic.com`).
 *
 * An instant check runs its NRQL as written (its own `SINCE`). A judged check's NRQL names no time: the range is
 * appended as `SINCE <start> UNTIL <end> TIMESERIES <step> seconds` (epoch milliseconds, as NRQL takes them;
 * https://docs.newrelic.com/docs/nrql/nrql-syntax-clauses-functions/#sel-timeseries), one bucket a sample.
 */
import type { AnalysisProvider } from "./analysis-provider.js";
import {
  instantOutcome,
  samplesOutcome,
  SourceError,
  sourceAnalysis,
  type SourceAccess,
  type SourceKind,
} from "./metric-source.js";

export const NEWRELIC_DEFAULT_ADDRESS = "https://api.newrelic.com";

export const NEWRELIC_KEYS = { apiKey: "apiKey" } as const;

/** The NerdGraph query; the account and the NRQL are variables, never spliced into the GraphQL text. */
export const NRQL_DOCUMENT =
  "query ($accountId: Int!, $nrql: Nrql!) { actor { account(id: $accountId) { nrql(query: $nrql) { results } } } }";

interface NerdGraphAnswer {
  data?: { actor?: { account?: { nrql?: { results?: Record<string, unknown>[] } | null } | null } };
  errors?: { message?: string }[];
}

/** Fields of a result row that are not the figure: a TIMESERIES bucket's bounds, a FACET's name. */
const NOT_FIGURES = new Set(["beginTimeSeconds", "endTimeSeconds", "facet", "timestamp"]);

/** The row's figure: its first numeric field that is not a bound or a facet (`{"count": 1000}` → 1000). */
function figure(row: Record<string, unknown>): number | undefined {
  for (const [name, value] of Object.entries(row)) {
    if (NOT_FIGURES.has(name)) continue;
    if (typeof value === "number") return value;
    // percentile() answers {"percentile.duration": {"99": 0.4}}.
    if (typeof value === "object" && value !== null) {
      const inner = Object.values(value).find((v) => typeof v === "number");
      if (typeof inner === "number") return inner;
    }
  }
  return undefined;
}

export const newRelicSource: SourceKind = {
  type: "newrelic",
  label: "New Relic",
  defaultAddress: () => NEWRELIC_DEFAULT_ADDRESS,
  needsSecret: true,
  requiredKeys: [NEWRELIC_KEYS.apiKey],
  query: async (source, check) => {
    const accountId = Number(check.provider?.accountId);
    if (!Number.isSafeInteger(accountId)) throw new SourceError("provider.accountId must be the account's number");
    const nrql = check.range
      ? `${check.query} SINCE ${Date.parse(check.range.start)} UNTIL ${Date.parse(check.range.end)} ` +
        `TIMESERIES ${check.range.stepSeconds} seconds`
      : check.query;
    const answer = (await source.call("/graphql", {
      method: "POST",
      headers: {
        "Content-Type": "application/json",
        "API-Key": source.secret(NEWRELIC_KEYS.apiKey) ?? "",
      },
      body: JSON.stringify({ query: NRQL_DOCUMENT, variables: { accountId, nrql } }),
    })) as NerdGraphAnswer;
    // NerdGraph answers 200 with `errors` for a bad NRQL or an account the key cannot see.
    const message = answer.errors?.map((e) => e.message ?? "").join("; ");
    if (message !== undefined && message !== "") throw new SourceError(message);
    const results = answer.data?.actor?.account?.nrql?.results;
    if (!Array.isArray(results)) throw new SourceError("the answer has no NRQL results");
    if (check.range) {
      return samplesOutcome([results.map(figure).filter((v): v is number => v !== undefined)]);
    }
    const rows = results
      .map((row, i) => ({ label: JSON.stringify(row.facet ?? i), value: figure(row) }))
      .filter((r): r is { label: string; value: number } => r.value !== undefined);
    return instantOutcome(rows);
  },
};

/** New Relic as the AnalysisProvider of the checks whose `provider.type` is `newrelic`. */
export function newRelicAnalysis(access: SourceAccess): AnalysisProvider {
  return sourceAnalysis(newRelicSource, access);
}

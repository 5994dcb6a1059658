/**
 * What the metric sources beyond Prometheus (datadog.ts, newrelic.ts, cloudwatch.ts, graphite.ts, influxdb.ts)
 * share: where a check's query may go and with which credentials, one HTTP exchange, and the AnalysisProvider
 * around a source's own query. The tenant boundary is the Prometheus one (credentials.ts): the address must be
 * inside the controller's URL policy, the Secret is read from the app's namespace only when it carries the
 * credentials label, and its contents go only where its `canaryapp.io/allowed-urls` says. A check naming a
 * Secret but no address goes to the source's default (public) address only. Redirects are never followed.
 */
import pRetry from "p-retry";
import type { Dispatcher } from "undici";
import { DEFAULTS } from "../../api/defaults.js";
import type { CanaryApp, MetricProviderSpec, MetricProviderType } from "../../api/types.js";
import { objectKey } from "../../object-keys.js";
import type { AnalysisCheck } from "../checks.js";
import type { QueryOutcome } from "../outcome.js";
import type { AnalysisProvider } from "./analysis-provider.js";
import { ALLOWED_URLS_ANNOTATION, type SecretReader } from "./credentials.js";
import { safeEndpoint, shortText, STATUS_MESSAGE_MAX } from "./message-text.js";

/** A failure of one source's query: printable, and `retryable` when asking again may help (5xx, 429, network). */
export class SourceError extends Error {
  override readonly name = "SourceError";
  constructor(
    message: string,
    readonly retryable = false,
  ) {
    super(message);
  }
}

/** The controller's rules, as the wiring hands them in (from prometheus/access.ts). */
export interface SourceAccess {
  /** Why `url` may not be queried for `app` (the controller's URL policy), or undefined. */
  refuseUrl: (app: CanaryApp, url: string) => Promise<string | undefined>;
  /** Reads a usable credentials Secret (labelled, in that namespace); null for any other. */
  readSecret: SecretReader;
  /** Why a Secret with this `canaryapp.io/allowed-urls` may not be sent to `url`, or undefined. */
  credentialsMayGo: (
    secret: { name: string; namespace: string; allowedUrls: string | undefined },
    url: string,
  ) => string | undefined;
  /** Limit for one attempt; default the app's `spec.prometheus.timeoutSeconds`, its analysis' deadline. */
  timeoutMs?: number;
  /** Retries after a transient failure; default 2. */
  retries?: number;
  /** The time of instant queries. */
  now?: () => Date;
  /** For tests: the HTTP dispatcher. */
  dispatcher?: Dispatcher;
}

/** A check's source, ready to be asked: its base URL and the Secret's values (decoded). */
export interface Source {
  /** The base URL, no trailing slash. */
  base: string;
  /** A key of the Secret, undefined when absent (or no Secret). */
  secret: (key: string) => string | undefined;
  /** One HTTP exchange with the source, retried when transient; the body parsed as JSON. */
  call: (path: string, init?: CallInit) => Promise<unknown>;
  now: () => Date;
}

export interface CallInit {
  method?: "GET" | "POST";
  headers?: Record<string, string>;
  body?: string;
}

/** How a source answers a check with the source at hand; rejects with `SourceError`. */
export type SourceQuery = (source: Source, check: AnalysisCheck) => Promise<Exclude<QueryOutcome, { kind: "error" }>>;

export interface SourceKind {
  type: MetricProviderType;
  /** As named in messages: "Datadog". */
  label: string;
  /** The address when the check names none (SaaS); absent: an address is required. */
  defaultAddress?: (spec: MetricProviderSpec) => string | undefined;
  /** Keys the Secret must have (when it is required, or named). */
  requiredKeys?: readonly string[];
  /** Whether the source cannot be asked without a Secret. */
  needsSecret?: boolean;
  query: SourceQuery;
}

/** The AnalysisProvider of one source kind: each check asked on its own, side by side, one outcome each. */
export function sourceAnalysis(kind: SourceKind, access: SourceAccess): AnalysisProvider {
  return {
    run: (app, checks) =>
      Promise.all(
        checks.map(async (check): Promise<QueryOutcome> => {
          const opened = await openSource(kind, app, check.provider ?? { type: kind.type }, access);
          if (typeof opened === "string") return { kind: "error", message: shortText(opened, STATUS_MESSAGE_MAX) };
          try {
            return await kind.query(opened, check);
          } catch (error) {
            const why = error instanceof Error ? error.message : String(error);
            const message = `${kind.label} ${safeEndpoint(opened.base)}: ${why}`;
            return { kind: "error", message: shortText(message, STATUS_MESSAGE_MAX) };
          }
        }),
      ),
  };
}

/**
 * The source a check may be sent to, or why not (a message naming the setting at fault, never a secret's
 * value). Rejects only when the Secret could not be read (transient: the analysis is tried again).
 */
export async function openSource(
  kind: SourceKind,
  app: CanaryApp,
  spec: MetricProviderSpec,
  access: SourceAccess,
): Promise<Source | string> {
  const about = `CanaryApp ${objectKey(app) ?? ""}: ${kind.label}`;
  const address = spec.address ?? kind.defaultAddress?.(spec);
  if (address === undefined) return `${about}: provider.address is required`;
  if (!URL.canParse(address) || !/^https?:$/.test(new URL(address).protocol)) {
    return `${about}: provider.address is not an http or https URL`;
  }
  const refused = await access.refuseUrl(app, address);
  if (refused !== undefined) return `${about}: ${refused}`;
  const values = new Map<string, string>();
  const secretName = spec.secretRef?.name;
  if (secretName === undefined && kind.needsSecret === true) return `${about}: provider.secretRef is required`;
  if (secretName !== undefined) {
    const namespace = app.metadata.namespace ?? "default";
    const where = `provider.secretRef: Secret ${namespace}/${secretName}`;
    let secret;
    try {
      secret = await access.readSecret(namespace, secretName);
    } catch (cause) {
      throw new Error(`${about}: reading Secret ${namespace}/${secretName} failed`, { cause });
    }
    if (!secret) {
      return `${about}: ${where} not found, or without the label canaryapp.io/credentials=true; nothing was sent`;
    }
    const allowedUrls = secret.metadata?.annotations?.[ALLOWED_URLS_ANNOTATION];
    const notThere = access.credentialsMayGo({ name: secretName, namespace, allowedUrls }, address);
    if (notThere !== undefined) return `${about}: ${where}: ${notThere}`;
    for (const [key, encoded] of Object.entries(secret.data ?? {})) {
      values.set(key, Buffer.from(encoded, "base64").toString("utf8"));
    }
    const missing = (kind.requiredKeys ?? []).filter((key) => !values.get(key));
    if (missing.length > 0) return `${about}: ${where} has no key ${missing.map((k) => `"${k}"`).join(", ")}`;
  }
  const base = address.replace(/\/+$/, "");
  const timeoutMs =
    access.timeoutMs ?? (app.spec.prometheus?.timeoutSeconds ?? DEFAULTS.prometheusTimeoutSeconds) * 1000;
  return {
    base,
    secret: (key) => values.get(key),
    call: (path, init) => call(`${base}${path}`, init ?? {}, { ...access, timeoutMs }),
    now: access.now ?? (() => new Date()),
  };
}

/** One exchange, retried on transient failure; a redirect is an error (credentials never follow it). */
function call(url: string, init: CallInit, access: SourceAccess): Promise<unknown> {
  const attempt = async (): Promise<unknown> => {
    // Loaded at the first query, not at start-up (ADR 0017): most controllers never ask these sources.
    const { request } = await import("undici");
    let response;
    try {
      response = await request(url, {
        method: init.method ?? "GET",
        headers: init.headers ?? {},
        ...(init.body !== undefined && { body: init.body }),
        signal: AbortSignal.timeout(access.timeoutMs ?? DEFAULTS.prometheusTimeoutSeconds * 1000),
        ...(access.dispatcher !== undefined && { dispatcher: access.dispatcher }),
      });
    } catch (error) {
      const code = (error as { code?: unknown }).code;
      throw new SourceError(`${typeof code === "string" ? `${code}: ` : ""}${(error as Error).message}`, true);
    }
    const text = await response.body.text();
    const status = response.statusCode;
    if (status >= 300 && status < 400) throw new SourceError(`HTTP ${status}: redirects are not followed`);
    if (status >= 400) throw new SourceError(`HTTP ${status}: ${detail(text)}`, status >= 500 || status === 429);
    try {
      return JSON.parse(text) as unknown;
    } catch {
      throw new SourceError(`the answer is not JSON: ${detail(text)}`);
    }
  };
  return pRetry(attempt, {
    retries: access.retries ?? 2,
    minTimeout: 200,
    // No retry starts once one attempt's time has passed: the analysis' deadline is about that long.
    maxRetryTime: access.timeoutMs,
    unref: true,
    shouldRetry: ({ error }) => error instanceof SourceError && error.retryable,
  });
}

/** A short excerpt of an error body: a JSON error's message, or the first line of text. */
function detail(text: string): string {
  try {
    const body = JSON.parse(text) as { errors?: unknown; error?: unknown; message?: unknown };
    const found = [body.errors, body.error, body.message].find((v) => v !== undefined);
    if (found !== undefined) return shortText(typeof found === "string" ? found : JSON.stringify(found));
  } catch {
    // not JSON
  }
  return text.trimStart().startsWith("<") ? "no detail" : shortText(text.trim().split("\n")[0] ?? "") || "no detail";
}

/** Seconds since the epoch of an RFC 3339 time. */
export function epochSeconds(time: string | Date): number {
  return Math.floor(new Date(time).getTime() / 1000);
}

/** A Go-style duration ("30s", "5m", "1h") in seconds; `fallback` when absent or unreadable. */
export function durationSeconds(duration: string | undefined, fallback: number): number {
  const match = /^(\d+)(s|m|h)$/.exec(duration ?? "");
  if (!match) return fallback;
  return Number(match[1]) * { s: 1, m: 60, h: 3600 }[match[2] as "s" | "m" | "h"];
}

/** Several series' last values as an instant outcome: none → empty, one → value, more → values. */
export function instantOutcome(
  series: readonly { label: string; value: number }[],
): Exclude<QueryOutcome, { kind: "error" }> {
  const [first] = series;
  if (first === undefined) return { kind: "empty" };
  if (series.length === 1) return { kind: "value", value: first.value };
  return { kind: "values", values: series.map((s) => s.value), labels: series.map((s) => s.label) };
}

/** A judged metric's samples from the series a range query returned: exactly one series, or none. */
export function samplesOutcome(series: readonly number[][]): Exclude<QueryOutcome, { kind: "error" }> {
  if (series.length > 1) throw new SourceError(`the query returned ${series.length} series; a judged metric needs one`);
  const values = (series[0] ?? []).filter((v) => Number.isFinite(v) || Math.abs(v) === Infinity);
  return values.length === 0 ? { kind: "empty" } : { kind: "samples", values };
}

/**
 * The outcome of the labelled series a query returned: a judged check's samples (its `range`) from the one series,
 * else the last value of each series.
 */
export function seriesOutcome(
  check: Pick<AnalysisCheck, "range">,
  series: readonly { label: string; values: readonly number[] }[],
): Exclude<QueryOutcome, { kind: "error" }> {
  if (check.range) return samplesOutcome(series.map((s) => [...s.values]));
  return instantOutcome(
    series
      .map((s) => ({ label: s.label, value: s.values.at(-1) }))
      .filter((s): s is { label: string; value: number } => s.value !== undefined),
  );
}

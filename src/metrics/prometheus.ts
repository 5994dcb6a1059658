import type { Agent, IncomingMessage } from "node:http";
import type { Logger } from "pino";
import { fromHttpAnswer, PrometheusConfigError, toPrometheusError, UnexpectedResultError } from "./errors.js";
import type { DataOutcome, MetricsProvider } from "./provider.js";
import { toOutcome } from "./result.js";
import { DEFAULT_RETRY_POLICY, retryTransient, type RetryPolicy } from "./retry.js";

// CommonJS objects, not ES imports: an ES import of node:http loads Node's bundled undici (ADR 0017).
const nodeHttp = process.getBuiltinModule("node:http");
const nodeHttps = process.getBuiltinModule("node:https");

/** How to authenticate to Prometheus: a bearer token, or HTTP basic auth. */
export type PrometheusAuth = { bearerToken: string } | { username: string; password: string };

export interface PrometheusProviderOptions {
  /** Base URL of Prometheus, e.g. `http://prometheus.istio-system:9090`; a path prefix is kept. */
  endpoint: string;
  /** Limit for one attempt (client side, and passed to Prometheus as the evaluation timeout). */
  timeoutMs?: number;
  auth?: PrometheusAuth;
  /** PEM bundle that verifies Prometheus' certificate, in place of the system's roots. */
  caPem?: string;
  retry?: Partial<RetryPolicy>;
  /** The evaluation time of instant queries. */
  now?: () => Date;
  log?: Logger;
  /** Whether a redirect may be followed to this URL; a refused one fails the query, unfollowed. */
  allowRedirect?: (url: URL) => boolean;
}

export const DEFAULT_TIMEOUT_MS = 5_000;

/**
 * A short, printable excerpt of a non-Prometheus error body (a proxy's plain-text message): its first line,
 * at most 80 characters. Whatever answered may not be a Prometheus, so its body is not echoed beyond that.
 */
function describeBody(data: unknown, statusText: unknown): string {
  if (typeof data === "string" && data.trim() !== "" && !data.trimStart().startsWith("<")) {
    return shortText(data.trim().split("\n")[0] ?? "");
  }
  return typeof statusText === "string" && statusText !== "" ? statusText : "no detail";
}

/** Printable ASCII only, whitespace collapsed, at most `max` characters. */
export function shortText(text: string, max = 80): string {
  const clean = text
    .replace(/[^\x20-\x7e]+/g, " ")
    .replace(/\s+/g, " ")
    .trim();
  return clean.length <= max ? clean : `${clean.slice(0, max - 1)}…`;
}

/** The endpoint as it may appear in messages and logs: no user info, no query string. */
export function safeEndpoint(endpoint: string): string {
  try {
    const url = new URL(endpoint);
    url.username = "";
    url.password = "";
    url.search = "";
    url.hash = "";
    return url.toString().replace(/\/$/, "");
  } catch {
    return "(invalid URL)";
  }
}

/** Redirects followed for one query before it fails. */
export const MAX_REDIRECTS = 5;

/** An answer's body is read up to this size; a bigger one is not a result a check can judge. */
const MAX_BODY_BYTES = 16 * 2 ** 20;

interface Answer {
  status: number;
  statusText: string;
  location: string | undefined;
  body: string;
}

/**
 * A `MetricsProvider` over Prometheus' HTTP API: instant queries (`GET <endpoint>/api/v1/query`) over
 * node:http(s), transient failures retried per `RetryPolicy`, every failure a typed `PrometheusError`.
 * Redirects are followed only where `allowRedirect` allows, and credentials only within the same origin.
 */
export class PrometheusProvider implements MetricsProvider {
  /** The endpoint without credentials, as it appears in error messages. */
  readonly endpoint: string;
  private readonly queryUrl: string;
  private readonly headers: Record<string, string>;
  private readonly agent: Agent | undefined;
  private readonly allowRedirect: ((url: URL) => boolean) | undefined;
  private readonly timeoutMs: number;
  private readonly policy: RetryPolicy;
  private readonly evaluationTimeout: string;
  private readonly now: () => Date;
  private readonly log: Logger | undefined;

  constructor(options: PrometheusProviderOptions) {
    this.endpoint = safeEndpoint(options.endpoint);
    let url: URL;
    try {
      url = new URL(options.endpoint);
    } catch (err) {
      throw new PrometheusConfigError(`Prometheus URL is not a valid URL`, { cause: err });
    }
    if (url.protocol !== "http:" && url.protocol !== "https:") {
      throw new PrometheusConfigError(`Prometheus ${this.endpoint}: the URL must be http or https`);
    }
    this.queryUrl = `${options.endpoint.replace(/\/$/, "")}/api/v1/query`;
    this.timeoutMs = options.timeoutMs ?? DEFAULT_TIMEOUT_MS;
    this.policy = { ...DEFAULT_RETRY_POLICY, ...options.retry };
    this.evaluationTimeout = `${Math.max(1, Math.round(this.timeoutMs))}ms`;
    this.now = options.now ?? (() => new Date());
    this.log = options.log;
    this.allowRedirect = options.allowRedirect;

    this.headers = { Accept: "application/json" };
    if (options.auth && "bearerToken" in options.auth) {
      this.headers.Authorization = `Bearer ${options.auth.bearerToken}`;
    }
    if (options.auth && "username" in options.auth) {
      const pair = `${options.auth.username}:${options.auth.password}`;
      this.headers.Authorization = `Basic ${Buffer.from(pair, "utf8").toString("base64")}`;
    }
    this.agent = options.caPem ? new nodeHttps.Agent({ ca: options.caPem, keepAlive: true }) : undefined;
  }

  query(promql: string): Promise<DataOutcome> {
    return retryTransient(() => this.queryOnce(promql), this.policy, this.log, {
      prometheus: this.endpoint,
      query: promql,
    });
  }

  private async queryOnce(promql: string): Promise<DataOutcome> {
    const url = new URL(this.queryUrl);
    url.searchParams.set("query", promql);
    url.searchParams.set("time", String(this.now().getTime() / 1000));
    url.searchParams.set("timeout", this.evaluationTimeout);
    let answer: Answer;
    try {
      answer = await this.follow(url);
    } catch (rejection) {
      throw toPrometheusError(rejection, this.endpoint);
    }
    return this.outcome(answer);
  }

  /** GETs `url`, following the redirects the policy allows, all within one timeout. */
  private async follow(url: URL): Promise<Answer> {
    const deadline = AbortSignal.timeout(this.timeoutMs);
    let target = url;
    let headers = this.headers;
    for (let redirects = 0; ; redirects++) {
      const answer = await this.get(target, headers, deadline);
      if (answer.status < 300 || answer.status >= 400 || answer.location === undefined) return answer;
      const next = new URL(answer.location, target);
      const refused = `Prometheus ${this.endpoint}: redirected to ${safeEndpoint(next.href)}`;
      if ((next.protocol !== "http:" && next.protocol !== "https:") || redirects === MAX_REDIRECTS) {
        throw new PrometheusConfigError(`${refused}; not followed (${redirects} redirects, http(s) only)`);
      }
      if (this.allowRedirect && !this.allowRedirect(next)) {
        throw new PrometheusConfigError(`${refused}, outside the controller's Prometheus URL policy; not followed`);
      }
      // Credentials stay with the origin they were given for.
      if (next.origin !== target.origin) {
        const { Authorization: _dropped, ...rest } = headers;
        headers = rest;
      }
      target = next;
    }
  }

  private get(url: URL, headers: Record<string, string>, deadline: AbortSignal): Promise<Answer> {
    const https = url.protocol === "https:";
    const send = https ? nodeHttps.request : nodeHttp.request;
    const agent = https ? this.agent : undefined;
    return new Promise<Answer>((resolve, reject) => {
      const timedOut = () => {
        const error = Object.assign(new Error(`no answer within ${this.timeoutMs} ms`), { code: "ETIMEDOUT" });
        req.destroy(error);
      };
      const req = send(url, { method: "GET", headers, ...(agent ? { agent } : {}) });
      if (deadline.aborted) timedOut();
      deadline.addEventListener("abort", timedOut, { once: true });
      const done = () => deadline.removeEventListener("abort", timedOut);
      req.on("error", (error) => {
        done();
        reject(error);
      });
      req.on("response", (response: IncomingMessage) => {
        readBody(response, `Prometheus ${this.endpoint}`).then(
          (body) => {
            done();
            resolve({
              status: response.statusCode ?? 0,
              statusText: response.statusMessage ?? "",
              location: response.headers.location,
              body,
            });
          },
          (error: unknown) => {
            done();
            reject(error instanceof Error ? error : new Error(String(error)));
          },
        );
      });
      req.end();
    });
  }

  /** The answer's outcome: a result, or the error its status or body means. */
  private outcome(answer: Answer): DataOutcome {
    const prefix = `Prometheus ${this.endpoint}`;
    let json: unknown;
    try {
      json = JSON.parse(answer.body);
    } catch {
      json = undefined;
    }
    if (answer.status < 200 || answer.status >= 300) {
      throw fromHttpAnswer(
        this.endpoint,
        answer.status,
        json ?? answer.body,
        describeBody(answer.body, answer.statusText),
      );
    }
    if (typeof json !== "object" || json === null || !("status" in json)) {
      throw new UnexpectedResultError(`${prefix}: the answer is not a Prometheus API response`, {
        errorType: "client_error",
      });
    }
    const { status, data, errorType, error } = json as {
      status: unknown;
      data?: { resultType?: unknown; result?: unknown };
      errorType?: unknown;
      error?: unknown;
    };
    if (status !== "success" || typeof data !== "object" || data === null) {
      throw new UnexpectedResultError(`${prefix}: ${typeof error === "string" ? shortText(error) : "no result"}`, {
        errorType: typeof errorType === "string" ? errorType : "client_error",
      });
    }
    return toOutcome({ resultType: String(data.resultType), result: data.result }, this.endpoint);
  }
}

/** The whole body as text, up to MAX_BODY_BYTES. */
async function readBody(response: IncomingMessage, prefix: string): Promise<string> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of response) {
    const buffer = chunk as Buffer;
    size += buffer.length;
    if (size > MAX_BODY_BYTES) {
      response.destroy();
      throw new UnexpectedResultError(`${prefix}: the answer is larger than ${MAX_BODY_BYTES} bytes`);
    }
    chunks.push(buffer);
  }
  return Buffer.concat(chunks).toString("utf8");
}

import assert from "node:assert/strict";
import { describe, test } from "node:test";
import type { PrometheusError } from "./errors.js";
import {
  PrometheusQueryError,
  PrometheusUnavailableError,
  UnexpectedResultError,
  toPrometheusError,
} from "./errors.js";

const endpoint = "http://prom:9090";

// The shapes prometheus-query 3.5 rejects with (see its handleResponse), and raw axios errors.
const cases: {
  name: string;
  rejection: unknown;
  type: new (...args: never[]) => PrometheusError;
  retryable: boolean;
}[] = [
  {
    name: "400 bad_data",
    rejection: {
      status: "error",
      errorType: "http_error",
      httpStatus: 400,
      error: "parse error: unexpected end of input",
      prometheus: { status: "error", errorType: "bad_data", error: "parse error" },
    },
    type: PrometheusQueryError,
    retryable: false,
  },
  {
    name: "422 execution",
    rejection: {
      errorType: "http_error",
      httpStatus: 422,
      error: "too many samples",
      prometheus: { errorType: "execution" },
    },
    type: PrometheusQueryError,
    retryable: false,
  },
  {
    name: "401",
    rejection: { errorType: "http_error", httpStatus: 401, error: "Unauthorized" },
    type: PrometheusQueryError,
    retryable: false,
  },
  {
    name: "500",
    rejection: { errorType: "http_error", httpStatus: 500, error: "boom" },
    type: PrometheusUnavailableError,
    retryable: true,
  },
  {
    name: "503",
    rejection: { errorType: "http_error", httpStatus: 503, error: "unavailable" },
    type: PrometheusUnavailableError,
    retryable: true,
  },
  {
    name: "429",
    rejection: { errorType: "http_error", httpStatus: 429, error: "slow down" },
    type: PrometheusUnavailableError,
    retryable: true,
  },
  {
    name: "connection refused",
    rejection: {
      status: "error",
      errorType: "network_error",
      error: "connect ECONNREFUSED 127.0.0.1:1",
      code: "ECONNREFUSED",
    },
    type: PrometheusUnavailableError,
    retryable: true,
  },
  {
    name: "timeout",
    rejection: {
      status: "error",
      errorType: "timeout_error",
      error: "timeout of 100ms exceeded",
      code: "ECONNABORTED",
    },
    type: PrometheusUnavailableError,
    retryable: true,
  },
  {
    name: "untrusted certificate",
    rejection: { errorType: "network_error", error: "self-signed certificate", code: "DEPTH_ZERO_SELF_SIGNED_CERT" },
    type: PrometheusUnavailableError,
    retryable: false,
  },
  {
    name: "raw axios error with a response",
    rejection: { isAxiosError: true, message: "Request failed", response: { status: 502, statusText: "Bad Gateway" } },
    type: PrometheusUnavailableError,
    retryable: true,
  },
  {
    name: "answer that is not a Prometheus response",
    rejection: { status: "error", errorType: "client_error", error: "unexpected client error", data: "<html>" },
    type: UnexpectedResultError,
    retryable: false,
  },
  {
    name: "the driver's second wrapping of a non-Prometheus 2xx body",
    rejection: {
      status: "error",
      errorType: "network_error",
      error: "unexpected network error",
      original: { status: "error", errorType: "client_error", error: "unexpected client error", data: "<html>" },
    },
    type: UnexpectedResultError,
    retryable: false,
  },
  {
    name: "driver's Error",
    rejection: new Error("Unexpected resultType: foo"),
    type: UnexpectedResultError,
    retryable: false,
  },
  { name: "thrown string", rejection: "Endpoint is required", type: UnexpectedResultError, retryable: false },
  { name: "undefined", rejection: undefined, type: UnexpectedResultError, retryable: false },
];

describe("toPrometheusError", () => {
  for (const c of cases) {
    test(`${c.name} → ${c.type.name}, retryable=${c.retryable}`, () => {
      const err = toPrometheusError(c.rejection, endpoint);
      assert.ok(err instanceof c.type, `got ${err.name}`);
      assert.ok(err instanceof Error);
      assert.equal(err.retryable, c.retryable);
      assert.match(err.message, /^Prometheus http:\/\/prom:9090: /);
    });
  }

  test("keeps the HTTP status and Prometheus' errorType", () => {
    const err = toPrometheusError(cases[0]?.rejection, endpoint);
    assert.equal(err.status, 400);
    assert.equal(err.errorType, "bad_data");
    assert.equal(err.reason, "QueryRejected");
    assert.match(err.message, /HTTP 400 bad_data: parse error: unexpected end of input/);
  });

  test("passes typed errors through unchanged", () => {
    const original = new PrometheusQueryError("x");
    assert.equal(toPrometheusError(original, endpoint), original);
  });
});

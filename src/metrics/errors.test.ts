import assert from "node:assert/strict";
import { describe, test } from "node:test";
import type { PrometheusError } from "./errors.js";
import {
  fromHttpAnswer,
  PrometheusQueryError,
  PrometheusUnavailableError,
  UnexpectedResultError,
  toPrometheusError,
} from "./errors.js";

const endpoint = "http://prom:9090";

// What the transport rejects with: Node's errors (with a code) and anything else; HTTP answers are classified
// by fromHttpAnswer.
const cases: {
  name: string;
  rejection: unknown;
  type: new (...args: never[]) => PrometheusError;
  retryable: boolean;
}[] = [
  {
    name: "connection refused",
    rejection: Object.assign(new Error("connect ECONNREFUSED 127.0.0.1:1"), { code: "ECONNREFUSED" }),
    type: PrometheusUnavailableError,
    retryable: true,
  },
  {
    name: "connection reset",
    rejection: Object.assign(new Error("socket hang up"), { code: "ECONNRESET" }),
    type: PrometheusUnavailableError,
    retryable: true,
  },
  {
    name: "timeout",
    rejection: Object.assign(new Error("no answer within 100 ms"), { code: "ETIMEDOUT" }),
    type: PrometheusUnavailableError,
    retryable: true,
  },
  {
    name: "untrusted certificate",
    rejection: Object.assign(new Error("self-signed certificate"), { code: "DEPTH_ZERO_SELF_SIGNED_CERT" }),
    type: PrometheusUnavailableError,
    retryable: false,
  },
  {
    name: "an Error without a code",
    rejection: new Error("Unexpected resultType: foo"),
    type: UnexpectedResultError,
    retryable: false,
  },
  { name: "thrown string", rejection: "Endpoint is required", type: UnexpectedResultError, retryable: false },
  { name: "undefined", rejection: undefined, type: UnexpectedResultError, retryable: false },
];

const answers: {
  name: string;
  status: number;
  body: unknown;
  type: new (...args: never[]) => PrometheusError;
  retryable: boolean;
}[] = [
  {
    name: "400 bad_data",
    status: 400,
    body: { status: "error", errorType: "bad_data", error: "parse error: unexpected end of input" },
    type: PrometheusQueryError,
    retryable: false,
  },
  {
    name: "422 execution",
    status: 422,
    body: { status: "error", errorType: "execution", error: "too many samples" },
    type: PrometheusQueryError,
    retryable: false,
  },
  { name: "401 (text)", status: 401, body: "Unauthorized", type: PrometheusQueryError, retryable: false },
  {
    name: "500",
    status: 500,
    body: { status: "error", error: "boom" },
    type: PrometheusUnavailableError,
    retryable: true,
  },
  { name: "503 (text)", status: 503, body: "unavailable", type: PrometheusUnavailableError, retryable: true },
  { name: "429 (text)", status: 429, body: "slow down", type: PrometheusUnavailableError, retryable: true },
  { name: "a proxy's 502 page", status: 502, body: "<html>", type: PrometheusUnavailableError, retryable: true },
];

describe("fromHttpAnswer", () => {
  for (const c of answers) {
    test(`${c.name} → ${c.type.name}, retryable=${c.retryable}`, () => {
      const err = fromHttpAnswer(endpoint, c.status, c.body, "detail");
      assert.ok(err instanceof c.type, `got ${err.name}`);
      assert.equal(err.retryable, c.retryable);
      assert.equal(err.status, c.status);
      assert.match(err.message, /^Prometheus http:\/\/prom:9090: HTTP \d+/);
    });
  }

  test("keeps the HTTP status and Prometheus' errorType and error", () => {
    const err = fromHttpAnswer(endpoint, 400, answers[0]?.body, "Bad Request");
    assert.equal(err.status, 400);
    assert.equal(err.errorType, "bad_data");
    assert.equal(err.reason, "QueryRejected");
    assert.match(err.message, /HTTP 400 bad_data: parse error: unexpected end of input/);
  });

  test("a body that is not Prometheus' shows the detail given", () => {
    assert.match(fromHttpAnswer(endpoint, 502, "<html>", "Bad Gateway").message, /HTTP 502: Bad Gateway$/);
  });
});

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

  test("a transport error keeps its code as the errorType", () => {
    const err = toPrometheusError(cases[0]?.rejection, endpoint);
    assert.equal(err.errorType, "ECONNREFUSED");
    assert.match(err.message, /^Prometheus http:\/\/prom:9090: ECONNREFUSED: connect ECONNREFUSED/);
  });

  test("passes typed errors through unchanged", () => {
    const original = new PrometheusQueryError("x");
    assert.equal(toPrometheusError(original, endpoint), original);
  });
});

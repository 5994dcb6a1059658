import { describe, test } from "node:test";
import assert from "node:assert/strict";
import { ApiException } from "@kubernetes/client-node";
import {
  KubeApiError,
  isConflict,
  isGone,
  isNetworkError,
  isNotFound,
  isTerminal,
  isTransient,
  retryAfterMs,
  statusCodeOf,
  toError,
} from "./errors.js";

function apiException(code: number, reason: string, message: string): ApiException<string> {
  const body = JSON.stringify({ kind: "Status", status: "Failure", reason, message, code });
  return new ApiException(code, "Unsuccessful HTTP Request", body, { "content-type": "application/json" });
}

function fetchFailed(code: string): TypeError {
  return new TypeError("fetch failed", { cause: Object.assign(new Error(`connect ${code}`), { code }) });
}

describe("toError", () => {
  test("an ApiException becomes a KubeApiError with the Status message, reason and code", () => {
    const err = toError(apiException(422, "Invalid", 'Deployment "web" is invalid'), "Deployment ns/web: apply");
    assert.ok(err instanceof KubeApiError);
    assert.equal(err.code, 422);
    assert.equal(err.reason, "Invalid");
    assert.equal(err.message, 'Deployment ns/web: apply: Deployment "web" is invalid (HTTP 422)');
    assert.ok(err.cause instanceof ApiException);
  });

  test("a Status body already parsed into an object is read too", () => {
    const err = toError(new ApiException(404, "x", { reason: "NotFound", message: "gone fishing" }, {}));
    assert.ok(err instanceof KubeApiError);
    assert.equal(err.message, "gone fishing (HTTP 404)");
  });

  test("a watch error with statusCode keeps its message", () => {
    const err = toError(Object.assign(new Error("Gone"), { statusCode: 410 }));
    assert.ok(err instanceof KubeApiError);
    assert.equal(err.code, 410);
    assert.equal(err.message, "Gone (HTTP 410)");
  });

  test("plain errors pass through, or gain the context", () => {
    const e = new Error("boom");
    assert.equal(toError(e), e);
    const wrapped = toError(e, "Service ns/a");
    assert.equal(wrapped.message, "Service ns/a: boom");
    assert.equal(wrapped.cause, e);
  });

  test("non-errors become errors", () => {
    assert.equal(toError("text").message, "text");
    assert.equal(toError({ message: "from an object" }).message, "from an object");
    assert.equal(toError(undefined, "ctx").message, "ctx: undefined");
  });
});

describe("classification", () => {
  const cases: { name: string; error: unknown; transient: boolean; terminal: boolean }[] = [
    { name: "409 conflict", error: apiException(409, "Conflict", "x"), transient: true, terminal: false },
    { name: "429 throttled", error: apiException(429, "TooManyRequests", "x"), transient: true, terminal: false },
    { name: "500", error: apiException(500, "InternalError", "x"), transient: true, terminal: false },
    { name: "503", error: apiException(503, "ServiceUnavailable", "x"), transient: true, terminal: false },
    { name: "400", error: apiException(400, "BadRequest", "x"), transient: false, terminal: true },
    { name: "403", error: apiException(403, "Forbidden", "x"), transient: false, terminal: true },
    { name: "422", error: apiException(422, "Invalid", "x"), transient: false, terminal: true },
    { name: "404", error: apiException(404, "NotFound", "x"), transient: false, terminal: false },
    { name: "connection refused", error: fetchFailed("ECONNREFUSED"), transient: true, terminal: false },
    {
      name: "reset",
      error: Object.assign(new Error("socket"), { code: "ECONNRESET" }),
      transient: true,
      terminal: false,
    },
    { name: "timeout", error: new DOMException("timed out", "TimeoutError"), transient: true, terminal: false },
    { name: "a bug", error: new TypeError("x is not a function"), transient: false, terminal: false },
    {
      name: "wrapped 409",
      error: toError(apiException(409, "Conflict", "x"), "ctx"),
      transient: true,
      terminal: false,
    },
  ];
  for (const c of cases) {
    test(`${c.name}: transient=${c.transient} terminal=${c.terminal}`, () => {
      assert.equal(isTransient(c.error), c.transient);
      assert.equal(isTerminal(c.error), c.terminal);
    });
  }

  test("status helpers", () => {
    assert.equal(isNotFound(apiException(404, "NotFound", "x")), true);
    assert.equal(isNotFound(apiException(409, "Conflict", "x")), false);
    assert.equal(isConflict(toError(apiException(409, "Conflict", "x"))), true);
    assert.equal(isGone({ code: 410 }), true);
    assert.equal(statusCodeOf(new Error("x")), undefined);
    assert.equal(statusCodeOf({ code: "ECONNRESET" }), undefined);
    assert.equal(isNetworkError(fetchFailed("EAI_AGAIN")), true);
    assert.equal(isNetworkError(new Error("x")), false);
  });
});

describe("retryAfterMs", () => {
  const throttled = (headers: Record<string, string>, details?: object) =>
    new ApiException(
      429,
      "Unsuccessful HTTP Request",
      JSON.stringify({ kind: "Status", status: "Failure", reason: "TooManyRequests", code: 429, details }),
      { "content-type": "application/json", ...headers },
    );
  const now = Date.parse("2026-01-01T00:00:00Z");

  const cases: [string, unknown, number | undefined][] = [
    ["the Retry-After header in seconds", throttled({ "retry-after": "3" }), 3000],
    ["the header whatever its case", throttled({ "Retry-After": "1" }), 1000],
    ["an HTTP date, from now", throttled({ "retry-after": "Thu, 01 Jan 2026 00:00:05 GMT" }), 5000],
    ["a date already past: at once", throttled({ "retry-after": "Wed, 31 Dec 2025 23:59:00 GMT" }), 0],
    ["the Status's details.retryAfterSeconds", throttled({}, { retryAfterSeconds: 2 }), 2000],
    ["the header before the Status", throttled({ "retry-after": "4" }, { retryAfterSeconds: 2 }), 4000],
    [
      "wrapped with the object it was about",
      toError(throttled({ "retry-after": "6" }), "Deployment a/web: apply"),
      6000,
    ],
    ["nothing said", throttled({}), undefined],
    ["garbage", throttled({ "retry-after": "soon" }), undefined],
    ["a conflict", toError(new ApiException(409, "x", "{}", {})), undefined],
    ["not an API error", new Error("boom"), undefined],
    ["not even an Error", "boom", undefined],
  ];
  for (const [name, error, expected] of cases) {
    test(name, () => assert.equal(retryAfterMs(error, now), expected));
  }
});

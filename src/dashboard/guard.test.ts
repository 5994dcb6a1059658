import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { parseAddress } from "./command.js";
import { allowedHosts, refusal, type RequestFacts } from "./guard.js";

const hosts = allowedHosts("127.0.0.1", 3100);
const get = (host: string | undefined): RequestFacts => ({
  method: "GET",
  host,
  origin: undefined,
  contentType: undefined,
});
const post = (over: Partial<RequestFacts>): RequestFacts => ({
  method: "POST",
  host: "127.0.0.1:3100",
  origin: "http://127.0.0.1:3100",
  contentType: "application/json",
  ...over,
});

describe("which requests the dashboard answers", () => {
  const cases: [string, RequestFacts, boolean, number | undefined][] = [
    ["the page on its address", get("127.0.0.1:3100"), false, undefined],
    ["the page by localhost", get("localhost:3100"), false, undefined],
    ["another host name (DNS rebinding)", get("evil.example:3100"), false, 421],
    ["another port", get("127.0.0.1:3101"), false, 421],
    ["no Host", get(undefined), false, 400],
    ["a control from the page", post({}), true, undefined],
    ["a control without Origin (curl)", post({ origin: undefined }), true, undefined],
    ["a control from another origin", post({ origin: "http://evil.example" }), true, 403],
    ["a control as a form post (no preflight)", post({ contentType: "application/x-www-form-urlencoded" }), true, 415],
    ["a control by GET", post({ method: "GET" }), true, 405],
  ];
  for (const [name, request, isControl, status] of cases) {
    test(name, () => assert.equal(refusal(request, hosts, isControl)?.status, status));
  }

  test("listening on every address, any Host is answered", () => {
    assert.equal(allowedHosts("0.0.0.0", 3100), undefined);
    assert.equal(refusal(get("laptop.local:3100"), undefined, false), undefined);
  });
});

describe("--address", () => {
  const cases: [string, { host: string; port: number } | RegExp][] = [
    ["127.0.0.1:3100", { host: "127.0.0.1", port: 3100 }],
    ["0.0.0.0:8080", { host: "0.0.0.0", port: 8080 }],
    ["localhost:0", { host: "localhost", port: 0 }],
    [":3200", { host: "127.0.0.1", port: 3200 }],
    ["3300", { host: "127.0.0.1", port: 3300 }],
    ["[::1]:3100", { host: "::1", port: 3100 }],
    ["host:99999", /invalid --address/],
    ["host:", /invalid --address/],
    ["a:b:1", /invalid --address/],
  ];
  for (const [text, want] of cases) {
    test(text, () => {
      if (want instanceof RegExp) assert.throws(() => parseAddress(text), want);
      else assert.deepEqual(parseAddress(text), want);
    });
  }
});

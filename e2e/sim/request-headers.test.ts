import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { seededRandom } from "./prng.js";
import { drawHeaders, parseHeaderSpec } from "./request-headers.js";

describe("parseHeaderSpec", () => {
  test("NAME=VALUE[:FRACTION]: the fraction defaults to every request; a header name is lower-cased", () => {
    assert.deepEqual(parseHeaderSpec("X-Canary=always:0.25", "header"), {
      kind: "header",
      name: "x-canary",
      value: "always",
      fraction: 0.25,
    });
    assert.deepEqual(parseHeaderSpec("x-canary=always", "header").fraction, 1);
    assert.deepEqual(parseHeaderSpec("canary=a:b", "cookie"), {
      kind: "cookie",
      name: "canary",
      value: "a:b",
      fraction: 1,
    });
    assert.deepEqual(parseHeaderSpec("x-url=http://h:8080:0.5", "header").value, "http://h:8080");
  });

  test("refuses what it cannot send", () => {
    assert.throws(() => parseHeaderSpec("x-canary", "header"), /NAME=VALUE/);
    assert.throws(() => parseHeaderSpec("x canary=1", "header"), /not a header name/);
    assert.throws(() => parseHeaderSpec("a;b=1", "cookie"), /not a cookie name/);
    assert.throws(() => parseHeaderSpec("x=1:1.5", "header"), /from 0 to 1/);
  });
});

describe("drawHeaders", () => {
  test("each spec on its own fraction of requests", () => {
    const random = seededRandom(4);
    const specs = [parseHeaderSpec("x-canary=always:0.25", "header")];
    let carried = 0;
    for (let i = 0; i < 10_000; i++) if (drawHeaders(specs, random)["x-canary"] === "always") carried++;
    assert.ok(Math.abs(carried / 10_000 - 0.25) < 0.015, `${carried}`);
  });

  test("cookies join into one cookie header, after one given as a header", () => {
    const always = () => 0;
    assert.deepEqual(
      drawHeaders(
        [
          parseHeaderSpec("cookie=session=abc", "header"),
          parseHeaderSpec("canary=always", "cookie"),
          parseHeaderSpec("beta=1", "cookie"),
        ],
        always,
      ),
      { cookie: "session=abc; canary=always; beta=1" },
    );
    assert.deepEqual(drawHeaders([], always), {});
  });
});

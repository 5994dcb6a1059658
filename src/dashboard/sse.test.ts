import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { comment, frame } from "./sse.js";

/** Parses a stream as the WHATWG algorithm does: fields per line, an event per blank line. */
function parseStream(text: string): { event: string; data: string }[] {
  const events: { event: string; data: string }[] = [];
  let event = "message";
  let data: string[] = [];
  for (const line of text.split("\n")) {
    if (line === "") {
      if (data.length > 0) events.push({ event, data: data.join("\n") });
      event = "message";
      data = [];
    } else if (line.startsWith(":")) continue;
    else {
      const colon = line.indexOf(":");
      const field = line.slice(0, colon);
      const value = line.slice(colon + 1).replace(/^ /, "");
      if (field === "event") event = value;
      if (field === "data") data.push(value);
    }
  }
  return events;
}

describe("SSE framing", () => {
  const cases: [string, string, string, string][] = [
    ["one line", "apps", "[]", "event: apps\ndata: []\n\n"],
    [
      "JSON with a line break in a string (escaped by JSON)",
      "detail",
      JSON.stringify({ m: "a\nb" }),
      'event: detail\ndata: {"m":"a\\nb"}\n\n',
    ],
    ["raw lines become data lines", "x", "a\nb\r\nc", "event: x\ndata: a\ndata: b\ndata: c\n\n"],
    ["empty data", "x", "", "event: x\ndata: \n\n"],
  ];
  for (const [name, event, data, want] of cases) {
    test(name, () => {
      assert.equal(frame(event, data), want);
      assert.deepEqual(parseStream(frame(event, data)), [{ event, data: data.replace(/\r\n/g, "\n") }]);
    });
  }

  test("an event name with a line break is refused", () => {
    assert.throws(() => frame("a\nb", "x"), /line break/);
  });

  test("a comment is one line the browser ignores", () => {
    assert.equal(comment("keep\nalive"), ": keep alive\n\n");
    assert.deepEqual(parseStream(comment("x") + frame("a", "1")), [{ event: "a", data: "1" }]);
  });
});

import assert from "node:assert/strict";
import { PassThrough } from "node:stream";
import { describe, test } from "node:test";
import fc from "fast-check";
import {
  assumeV8ReadsAlike,
  builtIn,
  custom,
  MANAGED,
  objectParts,
  watchedBuiltIn,
} from "./object-layouts.test-helpers.js";
import { LineSplitter, parsedWatchEvent, streamWatch, watchEventManagedFields } from "./watch-stream.js";

/** `bytes` split at `cuts` (offsets), in order. */
function chunked(bytes: Buffer, cuts: readonly number[]): Buffer[] {
  const chunks: Buffer[] = [];
  let from = 0;
  for (const cut of [...new Set(cuts)].filter((c) => c > 0 && c < bytes.length).sort((a, b) => a - b)) {
    chunks.push(bytes.subarray(from, cut));
    from = cut;
  }
  chunks.push(bytes.subarray(from));
  return chunks;
}

/** `JSON.parse` of an event line, its object's metadata.managedFields deleted. */
function parsedWithout(line: string): unknown {
  const event = JSON.parse(line) as { object?: { metadata?: { managedFields?: unknown } } };
  delete event.object?.metadata?.managedFields;
  return event;
}

const line = (type: string, object: unknown) => JSON.stringify({ type, object });

describe("LineSplitter", () => {
  test("any bytes, in any chunks, come out as the lines between their newlines", () => {
    fc.assert(
      fc.property(
        fc.array(fc.oneof(fc.string({ unit: "grapheme", maxLength: 20 }), fc.constantFrom("\n", "\r\n", "é𝄞")), {
          maxLength: 20,
        }),
        fc.array(fc.nat({ max: 200 }), { maxLength: 10 }),
        (parts, cuts) => {
          const text = parts.join("");
          const lines: string[] = [];
          const splitter = new LineSplitter();
          for (const chunk of chunked(Buffer.from(text), cuts)) splitter.push(chunk, (l) => lines.push(l.toString()));
          splitter.end((l) => lines.push(l.toString()));
          const expected = text.split("\n");
          // A text that ends with a newline has no last line after it.
          if (expected.at(-1) === "") expected.pop();
          assert.deepEqual(lines, expected);
        },
      ),
      { numRuns: 500 },
    );
  });
});

describe("watch events without managedFields", () => {
  test("the API server's layouts (a built-in's kind first, a custom resource's keys sorted) are cut before parsing", () => {
    for (const make of [watchedBuiltIn, custom]) {
      const text = line("MODIFIED", make("a", { managedFields: MANAGED }));
      const cut = watchEventManagedFields(Buffer.from(text));
      assert.ok(cut !== undefined, make.name);
      assert.match(text.slice(cut.from, cut.to), /^,"managedFields":\[\{"manager".*\}\]$/);
      assert.deepEqual(parsedWatchEvent(Buffer.from(text), true), parsedWithout(text));
    }
    // A list item's layout inside an event (no kind first) is a built-in's too.
    assert.ok(watchEventManagedFields(Buffer.from(line("ADDED", builtIn("a", { managedFields: MANAGED })))));
  });

  test("not cut where the layout does not prove it; then parsed whole and the field deleted", () => {
    const unproven = [
      line("ADDED", watchedBuiltIn("a", { spec: { template: { metadata: { name: "t", managedFields: MANAGED } } } })),
      line("ADDED", custom("a", { labels: { app: "a", name: "a" }, managedFields: MANAGED })),
      JSON.stringify({ object: custom("a", { managedFields: MANAGED }), type: "ADDED" }),
      JSON.stringify({ type: "ADDED", extra: 1, object: custom("a", { managedFields: MANAGED }) }),
    ];
    for (const text of unproven) {
      assert.equal(watchEventManagedFields(Buffer.from(text)), undefined, text);
      assert.deepEqual(parsedWatchEvent(Buffer.from(text), true), parsedWithout(text));
    }
    // Kept when not asked to drop it; a line that is not JSON is no event.
    const text = line("ADDED", custom("a", { managedFields: MANAGED }));
    assert.deepEqual(parsedWatchEvent(Buffer.from(text), false), JSON.parse(text));
    assert.equal(parsedWatchEvent(Buffer.from(text.slice(0, -1)), true), undefined);
    assert.equal(parsedWatchEvent(Buffer.from(" \r"), true), undefined);
  });

  test("any event laid out as the API server writes it reads as JSON.parse less metadata.managedFields", () => {
    const maker = fc.constantFrom(watchedBuiltIn, builtIn, custom);
    let cut = 0;
    fc.assert(
      fc.property(
        maker,
        objectParts(),
        fc.constantFrom("ADDED", "MODIFIED", "DELETED"),
        fc.boolean(),
        (make, parts, type, crlf) => {
          const text = line(type, make(parts.name, parts)) + (crlf ? "\r" : "");
          assumeV8ReadsAlike(text);
          if (watchEventManagedFields(Buffer.from(text)) !== undefined) cut++;
          assert.deepEqual(parsedWatchEvent(Buffer.from(text), true), parsedWithout(text));
        },
      ),
      { numRuns: 1000 },
    );
    assert.ok(cut > 200, `only ${cut} events were cut before parsing`);
  });
});

describe("streamWatch", () => {
  /** Runs a watch whose body is `chunks`; resolves with its events and how it ended. */
  async function watched(chunks: Buffer[], options = { withoutManagedFields: true }) {
    const body = new PassThrough();
    const events: [string, unknown][] = [];
    const ended = new Promise<unknown>((resolve) => {
      streamWatch(
        "/api/v1/services",
        () => Promise.resolve({ status: 200, statusText: "OK", body }),
        (type, object) => events.push([type, object]),
        resolve,
        60_000,
        options,
      );
    });
    for (const chunk of chunks) body.write(chunk);
    body.end();
    return { events, err: await ended };
  }

  test("events split anywhere across chunks arrive whole, in order, without managedFields, then the watch ends", async () => {
    const lines = [
      line("ADDED", watchedBuiltIn("a", { managedFields: MANAGED })),
      line("MODIFIED", custom("b", { managedFields: MANAGED })),
      line("BOOKMARK", { kind: "Service", apiVersion: "v1", metadata: { resourceVersion: "12" } }),
    ];
    const bytes = Buffer.from(`${lines[0]}\n\n${lines[1]}\r\n${lines[2]}`);
    for (const cuts of [[], [1, 2, 3], [bytes.length - 1], Array.from({ length: 40 }, (_, i) => i * 37)]) {
      const { events, err } = await watched(chunked(bytes, cuts));
      assert.equal(err, null);
      assert.deepEqual(
        events,
        lines.map((l) => {
          const event = parsedWithout(l) as { type: string; object: unknown };
          return [event.type, event.object];
        }),
      );
    }
  });

  test("a handler that throws ends the watch with its error", async () => {
    const body = new PassThrough();
    const ended = new Promise<unknown>((resolve) => {
      streamWatch(
        "/api/v1/services",
        () => Promise.resolve({ status: 200, statusText: "OK", body }),
        () => {
          throw new Error("handler failed");
        },
        resolve,
      );
    });
    body.write(`${line("ADDED", custom("a"))}\n`);
    const err = await ended;
    assert.ok(err instanceof Error && err.message === "handler failed", String(err));
  });

  test("the inactivity timeout counts from the last data, not from the start", async () => {
    const body = new PassThrough();
    const started = Date.now();
    const ended = new Promise<unknown>((resolve) => {
      streamWatch(
        "/api/v1/services",
        () => Promise.resolve({ status: 200, statusText: "OK", body }),
        () => undefined,
        resolve,
        300,
      );
    });
    const keepAlive = setInterval(() => body.write("\n"), 100);
    await new Promise((resolve) => setTimeout(resolve, 600));
    clearInterval(keepAlive);
    const err = await ended;
    assert.ok(err instanceof DOMException && err.name === "TimeoutError", String(err));
    assert.ok(Date.now() - started >= 800, `ended after ${Date.now() - started} ms`);
  });
});

import { describe, test } from "node:test";
import assert from "node:assert/strict";
import { abortable } from "./abortable.js";

describe("abortable", () => {
  test("passes the value or the error through while not aborted", async () => {
    const signal = new AbortController().signal;
    assert.equal(await abortable(Promise.resolve(5), signal), 5);
    await assert.rejects(abortable(Promise.reject(new Error("no")), signal), /no/);
  });

  test("resolves undefined on abort without waiting for the promise", async () => {
    const abort = new AbortController();
    const pending = abortable(new Promise<number>(() => undefined), abort.signal);
    abort.abort();
    assert.equal(await pending, undefined);
  });

  test("a rejection after abort is swallowed", async () => {
    const abort = new AbortController();
    let fail: (e: Error) => void = () => undefined;
    const p = abortable(new Promise<number>((_, reject) => (fail = reject)), abort.signal);
    abort.abort();
    fail(new Error("late"));
    assert.equal(await p, undefined);
    // Already aborted: resolves at once, and the promise's rejection is not unhandled.
    assert.equal(await abortable(Promise.reject(new Error("x")), abort.signal), undefined);
  });
});

import { describe, test } from "node:test";
import assert from "node:assert/strict";
import { FakeClock, flush } from "./fake-clock.test-helpers.js";
import { WorkQueue } from "./workqueue.js";

/** Resolves the promise's value if it settled already, else "pending". */
async function peek<T>(p: Promise<T>): Promise<T | "pending"> {
  return Promise.race([p, flush().then(() => "pending" as const)]);
}

describe("WorkQueue", () => {
  test("a key added 100 times is handed out once", async () => {
    const q = new WorkQueue({ clock: new FakeClock() });
    for (let i = 0; i < 100; i++) q.add("ns/a");
    assert.equal(q.len(), 1);
    assert.equal(await q.get(), "ns/a");
    assert.equal(q.len(), 0);
    assert.equal(await peek(q.get()), "pending");
  });

  test("keys come out in the order they were first added", async () => {
    const q = new WorkQueue({ clock: new FakeClock() });
    q.add("a");
    q.add("b");
    q.add("a");
    q.add("c");
    assert.deepEqual([await q.get(), await q.get(), await q.get()], ["a", "b", "c"]);
  });

  test("a key being processed is not handed to a second worker", async () => {
    const q = new WorkQueue({ clock: new FakeClock() });
    q.add("k");
    const first = await q.get();
    q.add("k");
    assert.equal(q.len(), 0, "held back while processing");
    const second = q.get();
    assert.equal(await peek(second), "pending");
    q.done("k");
    assert.equal(first, "k");
    assert.equal(await second, "k", "re-added key handed out after done");
  });

  test("re-adding a processing key many times yields exactly one more get", async () => {
    const q = new WorkQueue({ clock: new FakeClock() });
    q.add("k");
    await q.get();
    for (let i = 0; i < 10; i++) q.add("k");
    q.done("k");
    assert.equal(q.len(), 1);
    assert.equal(await q.get(), "k");
    q.done("k");
    assert.equal(q.len(), 0);
  });

  test("a key done without re-add is not queued again", async () => {
    const q = new WorkQueue({ clock: new FakeClock() });
    q.add("k");
    await q.get();
    q.done("k");
    assert.equal(q.len(), 0);
    assert.equal(q.inFlight(), 0);
  });

  test("concurrent workers never hold the same key", async () => {
    const q = new WorkQueue({ clock: new FakeClock() });
    const holding = new Set<string>();
    let overlaps = 0;
    let processed = 0;
    const worker = async (): Promise<void> => {
      for (;;) {
        const key = await q.get();
        if (key === undefined) return;
        if (holding.has(key)) overlaps++;
        holding.add(key);
        await flush();
        // Re-add while processing: must be held back until done.
        if (processed < 50) q.add(key);
        processed++;
        holding.delete(key);
        q.done(key);
      }
    };
    const workers = [worker(), worker(), worker(), worker()];
    for (let i = 0; i < 20; i++) q.add(`k${i % 3}`);
    while (processed < 50) await flush();
    await q.shutDownWithDrain();
    await Promise.all(workers);
    assert.equal(overlaps, 0);
  });

  test("a waiting getter receives the next added key", async () => {
    const q = new WorkQueue({ clock: new FakeClock() });
    const waiting = q.get();
    assert.equal(await peek(waiting), "pending");
    q.add("x");
    assert.equal(await waiting, "x");
  });

  describe("addRateLimited", () => {
    test("backs off 200 ms, doubling per failure, up to the cap", () => {
      const q = new WorkQueue({ clock: new FakeClock(), maxDelayMs: 3000 });
      const delays = Array.from({ length: 7 }, () => q.addRateLimited("k"));
      assert.deepEqual(delays, [200, 400, 800, 1600, 3000, 3000, 3000]);
      assert.equal(q.numRequeues("k"), 7);
    });

    test("the default cap is five minutes and large failure counts stay finite", () => {
      const q = new WorkQueue({ clock: new FakeClock() });
      let last = 0;
      for (let i = 0; i < 2000; i++) last = q.addRateLimited("k");
      assert.equal(last, 5 * 60 * 1000);
    });

    test("forget resets the backoff; keys back off independently", () => {
      const q = new WorkQueue({ clock: new FakeClock() });
      q.addRateLimited("a");
      q.addRateLimited("a");
      assert.equal(q.addRateLimited("b"), 200);
      q.forget("a");
      assert.equal(q.numRequeues("a"), 0);
      assert.equal(q.addRateLimited("a"), 200);
      assert.equal(q.numRequeues("b"), 1);
    });

    test("a Retry-After is the least delay: longer than the backoff it wins, shorter it does not", () => {
      const q = new WorkQueue({ clock: new FakeClock(), maxDelayMs: 10_000 });
      const cases: [number | undefined, number][] = [
        [3000, 3000], // 1st failure: backoff 200, the server asked for 3 s
        [100, 400], // 2nd: backoff 400 beats a shorter ask
        [undefined, 800],
        [0, 1600],
        [-5, 3200],
        [Number.NaN, 6400],
        [60_000, 10_000], // capped like any delay
      ];
      for (const [asked, expected] of cases) assert.equal(q.addRateLimited("k", asked), expected, String(asked));
      assert.equal(q.numRequeues("k"), cases.length, "each counts as a failure");
    });

    test("a throttled key waits the time the server asked for", async () => {
      const clock = new FakeClock();
      const q = new WorkQueue({ clock });
      q.addRateLimited("k", 2000);
      await clock.advance(1999);
      assert.equal(q.len(), 0);
      await clock.advance(1);
      assert.equal(await q.get(), "k");
    });

    test("the key is queued only when its delay has passed", async () => {
      const clock = new FakeClock();
      const q = new WorkQueue({ clock });
      q.addRateLimited("k");
      q.addRateLimited("k"); // 400 ms, but the 200 ms deadline already waits and is earlier
      await clock.advance(199);
      assert.equal(q.len(), 0);
      await clock.advance(1);
      assert.equal(q.len(), 1);
      assert.equal(await q.get(), "k");
    });
  });

  describe("addAfter", () => {
    test("keys become ready in deadline order", async () => {
      const clock = new FakeClock();
      const q = new WorkQueue({ clock });
      q.addAfter("late", 300);
      q.addAfter("early", 100);
      q.addAfter("middle", 200);
      await clock.advance(300);
      assert.deepEqual([await q.get(), await q.get(), await q.get()], ["early", "middle", "late"]);
    });

    test("the earliest deadline wins when a key is added after different delays", async () => {
      const clock = new FakeClock();
      const q = new WorkQueue({ clock });
      q.addAfter("k", 1000);
      q.addAfter("k", 100);
      q.addAfter("k", 5000);
      await clock.advance(100);
      assert.equal(q.len(), 1);
      assert.equal(await q.get(), "k");
      q.done("k");
      await clock.advance(10_000);
      assert.equal(q.len(), 0, "the later deadlines were discarded");
      assert.equal(clock.pending(), 0);
    });

    test("a zero or negative delay adds at once", () => {
      const q = new WorkQueue({ clock: new FakeClock() });
      q.addAfter("a", 0);
      q.addAfter("b", -5);
      assert.equal(q.len(), 2);
    });

    test("a delayed key that is also added directly is handed out once", async () => {
      const clock = new FakeClock();
      const q = new WorkQueue({ clock });
      q.addAfter("k", 100);
      q.add("k");
      assert.equal(await q.get(), "k");
      q.done("k");
      await clock.advance(100);
      // The delayed add is a fresh add after done: the key is reconciled again, as client-go does.
      assert.equal(q.len(), 1);
    });
  });

  describe("shutdown", () => {
    test("waiting getters receive undefined and later adds are ignored", async () => {
      const clock = new FakeClock();
      const q = new WorkQueue({ clock });
      const a = q.get();
      const b = q.get();
      q.addAfter("later", 100);
      q.shutDown();
      assert.equal(await a, undefined);
      assert.equal(await b, undefined);
      q.add("x");
      assert.equal(q.len(), 0);
      assert.equal(await q.get(), undefined);
      await clock.advance(1000);
      assert.equal(q.len(), 0, "delayed keys dropped");
      assert.equal(clock.pending(), 0, "timers cancelled");
    });

    test("drain waits until every in-flight key is done", async () => {
      const q = new WorkQueue({ clock: new FakeClock() });
      q.add("a");
      q.add("b");
      const a = await q.get();
      const b = await q.get();
      const drained = q.shutDownWithDrain();
      assert.equal(await peek(drained), "pending");
      q.done(a ?? "");
      assert.equal(await peek(drained), "pending");
      q.done(b ?? "");
      assert.equal(await peek(drained), undefined);
    });

    test("drain with nothing in flight resolves at once", async () => {
      const q = new WorkQueue({ clock: new FakeClock() });
      q.add("queued-but-not-taken");
      await q.shutDownWithDrain();
      assert.equal(q.len(), 0);
    });

    test("a key re-added during processing is not handed out after shutdown", async () => {
      const q = new WorkQueue({ clock: new FakeClock() });
      q.add("k");
      await q.get();
      q.add("k");
      const drained = q.shutDownWithDrain();
      q.done("k");
      await drained;
      assert.equal(await q.get(), undefined);
    });
  });

  test("remove forgets a key queued, delayed, rate-limited or in flight", async () => {
    const clock = new FakeClock();
    const q = new WorkQueue({ clock });
    q.add("queued");
    q.add("other");
    q.addAfter("delayed", 1_000);
    q.addRateLimited("limited");
    q.add("held");
    assert.equal(await q.get(), "queued");
    assert.equal(await q.get(), "other");
    assert.equal(await q.get(), "held");
    q.add("held"); // dirty while processing: would be queued again on done
    q.add("queued");
    for (const key of ["queued", "delayed", "limited", "held"]) q.remove(key);
    q.done("held");
    await clock.advance(10_000);
    assert.equal(q.len(), 0, "nothing queued again");
    assert.equal(q.numRequeues("limited"), 0, "backoff forgotten");
    q.add("other");
    assert.equal(q.len(), 0, "a key still in flight is untouched by the removal of others");
  });

  test("rejects a cap below the base delay", () => {
    assert.throws(() => new WorkQueue({ baseDelayMs: 1000, maxDelayMs: 10 }), /invalid backoff/);
  });
});

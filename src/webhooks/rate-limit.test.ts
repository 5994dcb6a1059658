import assert from "node:assert/strict";
import { describe, test } from "node:test";
import fc from "fast-check";
import { PostLimiter, POSTS_PER_MINUTE } from "./rate-limit.js";

describe("PostLimiter", () => {
  test("a burst of POSTS_PER_MINUTE passes, the next waits for a token, refilled at that rate a minute", () => {
    let now = 0;
    const limiter = new PostLimiter({ now: () => now });
    assert.equal(POSTS_PER_MINUTE, 120);
    for (let i = 0; i < 120; i++) assert.equal(limiter.take("shop/web"), true, `POST ${i + 1}`);
    assert.equal(limiter.take("shop/web"), false);
    now += 499;
    assert.equal(limiter.take("shop/web"), false, "not a whole token yet");
    now += 1;
    assert.equal(limiter.take("shop/web"), true, "one token every 500 ms");
    assert.equal(limiter.take("shop/web"), false);
    now += 60_000;
    assert.equal(limiter.available("shop/web"), 120, "a full bucket after a minute");
  });

  test("apps have buckets of their own", () => {
    const limiter = new PostLimiter({ now: () => 0, perMinute: 2 });
    assert.equal(limiter.take("shop/a"), true);
    assert.equal(limiter.take("shop/a"), true);
    assert.equal(limiter.take("shop/a"), false);
    assert.equal(limiter.take("shop/b"), true);
  });

  test("a normal rollout is never limited: 20 webhooks at the 30 s default and every notice, for an hour", () => {
    let now = 0;
    const limiter = new PostLimiter({ now: () => now });
    for (let interval = 0; interval < 120; interval++) {
      // Each interval: every webhook once, and a notice to 10 receivers, the controller's and 20 post-rollout.
      for (let i = 0; i < 20 + 31; i++) assert.equal(limiter.take("shop/web"), true, `interval ${interval}`);
      now += 30_000;
    }
  });

  test("property: over any window, at most burst + rate × window POSTs pass, and a pause refills", () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 300 }),
        fc.array(fc.integer({ min: 0, max: 2_000 }), { minLength: 1, maxLength: 400 }),
        (perMinute, gaps) => {
          let now = 0;
          const limiter = new PostLimiter({ now: () => now, perMinute });
          let passed = 0;
          for (const gap of gaps) {
            now += gap;
            if (limiter.take("k")) passed++;
          }
          assert.ok(passed <= perMinute + (perMinute * now) / 60_000 + 1e-9, `${passed} passed in ${now} ms`);
          now += 60_000;
          assert.equal(limiter.available("k"), perMinute);
        },
      ),
    );
  });

  test("with more keys than it keeps, full buckets go first: no app gains a burst it had not earned", () => {
    let now = 0;
    const limiter = new PostLimiter({ now: () => now, perMinute: 2, maxBuckets: 2 });
    assert.equal(limiter.take("busy"), true);
    assert.equal(limiter.take("busy"), true);
    now += 60_000;
    // "idle" refilled long ago; "busy" emptied just now.
    assert.equal(limiter.take("idle"), true);
    assert.equal(limiter.take("busy"), true);
    assert.equal(limiter.take("busy"), true);
    assert.equal(limiter.take("third"), true);
    assert.equal(limiter.take("busy"), false, "busy kept its empty bucket");
  });
});

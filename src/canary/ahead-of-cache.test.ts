import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { AheadOfCache } from "./ahead-of-cache.js";

const svc = { kind: "Service", namespace: "shop", name: "web-primary" };

describe("AheadOfCache", () => {
  test("an applied child is ahead of the cache with that hash only, until an event of it is seen", () => {
    const ahead = new AheadOfCache();
    assert.equal(ahead.appliedUnseen(svc, "h1"), false);
    ahead.applied(svc, "h1");
    assert.equal(ahead.appliedUnseen(svc, "h1"), true);
    assert.equal(ahead.appliedUnseen(svc, "h2"), false, "a different desired state is written again");
    assert.equal(ahead.appliedUnseen({ ...svc, kind: "Deployment" }, "h1"), false, "keyed by kind too");
    ahead.seen(svc);
    assert.equal(ahead.appliedUnseen(svc, "h1"), false);
  });

  test("a deleted child is ahead of the cache until its delete event; applying it again replaces the entry", () => {
    const ahead = new AheadOfCache();
    ahead.deleted(svc);
    assert.equal(ahead.deletedUnseen(svc), true);
    ahead.applied(svc, "h1");
    assert.equal(ahead.deletedUnseen(svc), false);
    ahead.deleted(svc);
    ahead.seen(svc);
    assert.equal(ahead.deletedUnseen(svc), false);
  });

  test("a transition is told once per app until the app is forgotten; an app without one is never told", () => {
    const ahead = new AheadOfCache();
    assert.equal(ahead.toldTransition("shop/web", "uid/3/t"), false);
    ahead.told("shop/web", "uid/3/t");
    assert.equal(ahead.toldTransition("shop/web", "uid/3/t"), true);
    assert.equal(ahead.toldTransition("shop/web", "uid/4/t"), false, "a later transition is told");
    assert.equal(ahead.toldTransition("shop/api", "uid/3/t"), false);
    ahead.told("shop/api", undefined);
    assert.equal(ahead.toldTransition("shop/api", undefined), false);
    ahead.forgetApp("shop/web");
    assert.equal(ahead.toldTransition("shop/web", "uid/3/t"), false);
  });
});

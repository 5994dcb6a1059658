import assert from "node:assert/strict";
import { describe, test } from "node:test";
import fc from "fast-check";
import type { CanaryApp } from "../api/types.js";
import { seedApp } from "../resources/fixtures.test-helpers.js";
import type { PlannedEvent } from "../rollout/types.js";
import { eventName, REPLAY_SECONDS, stale, told, toTell, withTransition } from "./transition-events.js";

const AT = "2026-01-01T12:00:00Z";
const PROMOTED: PlannedEvent = { type: "Normal", reason: "Promoted", message: "promoted web:2" };
const STEP: PlannedEvent = { type: "Normal", reason: "StepAdvanced", message: "shifted 10% to web:2" };

function app(status: CanaryApp["status"], uid = "uid-1"): CanaryApp {
  const a = seedApp();
  a.metadata = { ...a.metadata, name: "web", namespace: "shop", uid };
  a.status = status;
  return a;
}

describe("withTransition", () => {
  test("a plan without Events leaves the status as planned (an earlier transition's record stays)", () => {
    const previous = { phase: "Healthy" as const, lastEvents: { seq: 3, at: AT } };
    const next = { ...previous, message: "unchanged" };
    assert.equal(withTransition(previous, next, [], AT), next);
  });

  test("numbers the transition after the previous one and records its Events as pending", () => {
    const previous = { lastEvents: { seq: 3, at: AT } };
    const next = withTransition(previous, { phase: "Healthy" }, [STEP, PROMOTED], "2026-01-01T12:01:00Z");
    assert.deepEqual(next.lastEvents, { seq: 4, at: "2026-01-01T12:01:00Z", pending: [STEP, PROMOTED] });
    assert.equal(withTransition({}, {}, [STEP], AT).lastEvents?.seq, 1, "an app's first transition is 1");
  });

  test("bounded: at most 10 Events of at most 1024 characters", () => {
    const long = { type: "Warning" as const, reason: "RolledBack", message: "x".repeat(5000) };
    const pending =
      withTransition(
        {},
        {},
        Array.from({ length: 15 }, () => long),
        AT,
      ).lastEvents?.pending ?? [];
    assert.equal(pending.length, 10);
    assert.ok(pending.every((e) => e.message.length === 1024 && e.message.endsWith("...")));
  });
});

describe("toTell and told", () => {
  const now = new Date(Date.parse(AT) + 5_000);

  test("the pending Events with their names, in order", () => {
    const a = app({ lastEvents: { seq: 2, at: AT, pending: [STEP, PROMOTED] } });
    assert.deepEqual(toTell(a, now), [
      { name: eventName(a, 2, 0, AT), event: STEP },
      { name: eventName(a, 2, 1, AT), event: PROMOTED },
    ]);
  });

  test("nothing once told, and nothing when the transition is older than the bound", () => {
    const a = app({ lastEvents: { seq: 2, at: AT, pending: [PROMOTED] } });
    assert.deepEqual(toTell(app(told(a.status ?? {})), now), []);
    assert.deepEqual(told(a.status ?? {}).lastEvents, { seq: 2, at: AT }, "the number and time are kept");
    const late = new Date(Date.parse(AT) + REPLAY_SECONDS * 1000 + 1);
    assert.equal(stale({ seq: 2, at: AT }, late), true);
    assert.deepEqual(toTell(a, late), []);
    assert.equal(stale({ seq: 2, at: AT }, new Date(Date.parse(AT) + REPLAY_SECONDS * 1000)), false);
    assert.equal(stale({ seq: 2, at: "not a time" }, now), true);
  });

  test("told leaves a status without pending Events as it is", () => {
    const status = { phase: "Healthy" as const, lastEvents: { seq: 1, at: AT } };
    assert.equal(told(status), status);
    assert.equal(told({}).lastEvents, undefined);
  });
});

describe("eventName", () => {
  test("the same for every controller; a valid name of the app's Event shape", () => {
    const a = app({});
    assert.equal(eventName(a, 4, 1, AT), eventName(structuredClone(a), 4, 1, AT));
    assert.match(eventName(a, 4, 1, AT), /^web\.[0-9a-f]{24}$/);
  });

  test("in time order, and a transition's Events in their planned order, when listed by name", () => {
    const a = app({});
    const later = new Date(Date.parse(AT) + 1).toISOString();
    const names = [eventName(a, 4, 0, AT), eventName(a, 4, 1, AT), eventName(a, 4, 9, AT), eventName(a, 5, 0, later)];
    assert.deepEqual([...names].sort(), names);
  });

  test("distinct across apps (uid), transitions and indexes", () => {
    fc.assert(
      fc.property(
        fc.tuple(fc.uuid(), fc.nat(999), fc.nat(9)),
        fc.tuple(fc.uuid(), fc.nat(999), fc.nat(9)),
        ([u1, s1, i1], [u2, s2, i2]) => {
          fc.pre(u1 !== u2 || s1 !== s2 || i1 !== i2);
          assert.notEqual(eventName(app({}, u1), s1, i1, AT), eventName(app({}, u2), s2, i2, AT));
        },
      ),
    );
  });

  test("a long app name is cut so that the Event's name stays within 253 characters", () => {
    const a = app({});
    a.metadata.name = "a".repeat(253);
    assert.equal(eventName(a, 1, 0, AT).length, 253);
  });
});

import assert from "node:assert/strict";
import { test } from "node:test";
import type { CanaryApp, CanaryAppStatus } from "../api/types.js";
import { formatNotice, genericPayload } from "../notify/format.js";
import { OUTBOX_MAX, withNotices } from "./outbox.js";

const app: CanaryApp = {
  metadata: { name: "web", namespace: "shop", uid: "u1" },
  spec: { image: "app:v3", imageListenPort: 8080 },
};
const rollingBack: CanaryAppStatus = {
  primaryImage: "app:v1",
  canary: {
    image: "app:v3",
    stage: "RollingBack",
    step: 0,
    startedAt: "t0",
    stepStartedAt: "t1",
    failedChecks: 1,
    outcome: { result: "Failed", reason: "AnalysisFailed", message: "errors 7 > 0" },
  },
  failedImages: [
    {
      image: "app:v3",
      failedAt: "t1",
      reason: "AnalysisFailed",
      message: "errors 7 > 0",
      metric: "errors",
      value: 7,
      query: "max(errors)",
    },
  ],
};
const rolledBack: CanaryAppStatus = { primaryImage: "app:v1", failedImages: rollingBack.failedImages ?? [] };
const event = (reason: string) => ({ type: "Warning" as const, reason, message: `${reason} message` });

test("a status transition adds its notice, numbered, with the failure's reason, metric, value and query", () => {
  const next = withNotices(app, rollingBack, rolledBack, {
    events: [event("RolledBack")],
    delivered: undefined,
    at: "t2",
  });
  assert.deepEqual(next.notifications, {
    seq: 1,
    delivered: 0,
    pending: [
      {
        seq: 1,
        idempotencyKey: "u1/1",
        time: "t2",
        event: "RolledBack",
        image: "app:v3",
        primaryImage: "app:v1",
        reason: "AnalysisFailed",
        message: "errors 7 > 0",
        metric: "errors",
        value: 7,
        query: "max(errors)",
      },
    ],
  });
});

test("events that are not notified add nothing; without an outbox the status is left as it is", () => {
  const next = withNotices(app, rollingBack, rolledBack, {
    events: [event("StepAdvanced")],
    delivered: undefined,
    at: "t",
  });
  assert.equal(next, rolledBack);
});

test("delivered notices leave the outbox; the numbering goes on", () => {
  const one = withNotices(
    app,
    {},
    { canary: rollingBack.canary! },
    { events: [event("TestStarted")], delivered: undefined, at: "a" },
  );
  const two = withNotices(app, one, one, { events: [event("PromotionSlow")], delivered: 1, at: "b" });
  assert.equal(two.notifications?.delivered, 1);
  assert.deepEqual(
    two.notifications?.pending.map((n) => [n.seq, n.event, n.reason]),
    [[2, "Failure", "PromotionSlow"]],
  );
});

test("a reconcile's own failure (a rejected child) is a notice; the outbox is bounded", () => {
  let status: CanaryAppStatus = {};
  for (let i = 0; i < OUTBOX_MAX + 5; i++) {
    status = withNotices(app, status, status, {
      events: [],
      failure: { reason: "ChildRejected", message: `rejected ${i}` },
      delivered: undefined,
      at: "t",
    });
  }
  assert.equal(status.notifications?.seq, OUTBOX_MAX + 5);
  assert.equal(status.notifications?.pending.length, OUTBOX_MAX);
  assert.equal(status.notifications?.pending[0]?.message, "rejected 5", "the oldest went first");
});

test("Slack and Teams messages carry the reason, metric, value, query and key", () => {
  const notice = withNotices(app, rollingBack, rolledBack, { events: [event("RolledBack")], delivered: 0, at: "t" })
    .notifications?.pending[0];
  assert.ok(notice !== undefined);
  const payload = genericPayload({ name: "web", namespace: "shop" }, notice);
  const slack = JSON.stringify(formatNotice("slack", payload));
  const teams = JSON.stringify(formatNotice("teams", payload));
  for (const text of [slack, teams]) {
    for (const part of ["shop/web: rolled back app:v3 (AnalysisFailed)", "errors", '"7"', "max(errors)", "u1/1"]) {
      assert.ok(text.includes(part), `${part} in ${text}`);
    }
  }
  assert.deepEqual(formatNotice("generic", payload), payload);
});

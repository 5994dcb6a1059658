import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { pino } from "pino";
import type { CanaryApp, CanaryAppStatus } from "../api/types.js";
import { CONDITION } from "../api/types.js";
import { seedApp } from "../resources/fixtures.test-helpers.js";
import { CHILDREN_APPLIED } from "../rollout/conditions.js";
import type { PlannedEvent } from "../rollout/types.js";
import { StaleStatusError, StatusWriter, type StatusWriterDeps, type ToldMemory } from "./writer.js";

const NOW = new Date(Date.UTC(2026, 10, 27, 12));
const log = pino({ level: "silent" });

function app(status?: CanaryAppStatus): CanaryApp {
  const seed = seedApp();
  return {
    ...seed,
    metadata: { namespace: "shop", name: "web", uid: "u1", generation: 2, resourceVersion: "10" },
    ...(status !== undefined ? { status } : {}),
  };
}

/** A writer whose status writes and told Events are recorded; `failTell` names Events the recorder refuses. */
function harness(options: { conflict?: boolean; failTell?: string[]; notices?: boolean } = {}) {
  const writes: CanaryAppStatus[] = [];
  const told: string[] = [];
  const noted: string[] = [];
  const memory = new Map<string, string>();
  const toldMemory: ToldMemory = {
    toldTransition: (key, transition) => transition !== undefined && memory.get(key) === transition,
    told: (key, transition) => {
      if (transition !== undefined) memory.set(key, transition);
    },
  };
  const deps: StatusWriterDeps = {
    store: {
      replaceStatus: (_app, status) => {
        if (options.conflict === true)
          return Promise.reject(Object.assign(new Error("Conflict"), { code: 409, statusCode: 409 }));
        writes.push(structuredClone(status));
        return Promise.resolve(String(10 + writes.length));
      },
    },
    events: {
      tell: (_app, event, name) => {
        if (options.failTell?.includes(event.reason) === true) return Promise.resolve(false);
        told.push(`${event.reason} ${name}`);
        return Promise.resolve(true);
      },
    },
    told: toldMemory,
    ...(options.notices === true ? { notices: { enabled: () => true, delivered: () => undefined } } : {}),
    onEvent: (_app, event) => noted.push(event.reason),
  };
  return { writer: new StatusWriter(deps), writes, told, noted };
}

const promoted: PlannedEvent = { type: "Normal", reason: "Promoted", message: "web:2 promoted" };

describe("StatusWriter", () => {
  test("records the plan's status with its Events, then tells them; the app is kept current", async () => {
    const { writer, writes, told, noted } = harness();
    const subject = app({ phase: "Progressing" });
    const all = await writer.record(subject, { status: { phase: "Healthy" }, events: [promoted] }, NOW, log);
    assert.equal(all, true);
    assert.equal(writes.length, 1);
    assert.equal(writes[0]?.phase, "Healthy");
    assert.deepEqual(writes[0]?.lastEvents?.pending, [promoted], "the Events are on record before they are told");
    assert.equal(told.length, 1);
    assert.match(told[0] ?? "", /^Promoted web\.[0-9a-f]{24}$/);
    assert.deepEqual(noted, ["Promoted"]);
    assert.equal(subject.status?.phase, "Healthy");
    assert.equal(subject.metadata.resourceVersion, "11");
  });

  test("the told mark rides on the write after acting, only when that write is needed anyway", async () => {
    const { writer, writes } = harness();
    const subject = app({ phase: "Progressing" });
    const all = await writer.record(subject, { status: { phase: "Healthy" }, events: [promoted] }, NOW, log);
    await writer.recordActed(subject, { createdPrimary: null }, all, NOW);
    assert.equal(writes.length, 1, "nothing else changed: no write only to mark the Events told");
    assert.ok(subject.status?.lastEvents?.pending !== undefined);
    await writer.recordActed(
      subject,
      { rejection: { reason: "ChildRejected", message: "bad probe" }, createdPrimary: null },
      all,
      NOW,
    );
    assert.equal(writes.length, 2);
    assert.equal(writes[1]?.lastEvents?.pending, undefined, "marked told with the rejection's write");
    const applied = writes[1]?.conditions?.find((c) => c.type === CHILDREN_APPLIED);
    assert.equal(applied?.status, "False");
    assert.equal(applied?.message, "bad probe");
  });

  test("an Event the recorder could not create stays pending and is told again by the next record", async () => {
    const { writer, told } = harness({ failTell: ["Promoted"] });
    const subject = app({});
    assert.equal(await writer.record(subject, { status: { phase: "Healthy" }, events: [promoted] }, NOW, log), false);
    assert.equal(told.length, 0);
    assert.ok(subject.status?.lastEvents?.pending !== undefined);
  });

  test("a transition already told by this process is not told again", async () => {
    const { writer, told } = harness();
    const subject = app({});
    await writer.record(subject, { status: { phase: "Healthy" }, events: [promoted] }, NOW, log);
    await writer.record(subject, { status: subject.status ?? {}, events: [] }, NOW, log);
    assert.equal(told.length, 1);
  });

  test("a status equal to the app's is not written", async () => {
    const { writer, writes } = harness();
    await writer.record(app({ phase: "Healthy" }), { status: { phase: "Healthy" }, events: [] }, NOW, log);
    assert.equal(writes.length, 0);
  });

  test("a lost race is a StaleStatusError naming the app, and the app is left as read", async () => {
    const { writer } = harness({ conflict: true });
    const subject = app({ phase: "Progressing" });
    await assert.rejects(
      writer.record(subject, { status: { phase: "Healthy" }, events: [] }, NOW, log),
      (error: unknown) => error instanceof StaleStatusError && /shop\/web/.test(error.message),
    );
    assert.equal(subject.status?.phase, "Progressing");
    assert.equal(subject.metadata.resourceVersion, "10");
  });

  test("with receivers, the outbox gets a notice per transition Event and one per new rejection only", async () => {
    const { writer, writes } = harness({ notices: true });
    const subject = app({ phase: "Progressing", canary: { image: "web:2" } as CanaryAppStatus["canary"] });
    await writer.record(subject, { status: { phase: "Healthy" }, events: [promoted] }, NOW, log);
    const rejection = { reason: "ChildRejected" as const, message: "bad probe" };
    await writer.recordActed(subject, { rejection, createdPrimary: null }, true, NOW);
    await writer.recordActed(subject, { rejection, createdPrimary: null }, true, NOW);
    const box = subject.status?.notifications;
    assert.deepEqual(
      box?.pending.map((n) => n.event),
      ["Promoted", "Failure"],
      "the same rejection named again is not a new notice",
    );
    assert.equal(writes.length, 2);
  });

  test("the primary just created makes Ready say what the next reconcile will see", async () => {
    const { writer, writes } = harness();
    const subject = app({
      conditions: [
        {
          type: CONDITION.Ready,
          status: "False",
          reason: "PrimaryMissing",
          message: "the primary does not exist yet",
          lastTransitionTime: "2026-11-27T11:00:00Z",
        },
      ],
    });
    await writer.recordActed(
      subject,
      { createdPrimary: { image: "web:1", available: false, replicas: 2, readyReplicas: 0 } },
      true,
      NOW,
    );
    assert.equal(writes.length, 1);
    const ready = writes[0]?.conditions?.find((c) => c.type === CONDITION.Ready);
    assert.notEqual(ready?.reason, "PrimaryMissing");
  });
});

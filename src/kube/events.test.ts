import { after, before, beforeEach, describe, test } from "node:test";
import assert from "node:assert/strict";
import { pino } from "pino";
import { FakeClock } from "../controller/fake-clock.test-helpers.js";
import { EventRecorder, eventClientFor, type EventClient } from "./events.js";
import { FakeApiServer, status, type RecordedRequest } from "./fake-apiserver.test-helpers.js";

const app = {
  apiVersion: "canaryapp.io/v1alpha1",
  kind: "CanaryApp",
  metadata: { name: "web", namespace: "shop", uid: "u-1", resourceVersion: "5" },
};

/** A logger whose warnings tests can read. */
function capturingLogger(): { log: pino.Logger; lines: Record<string, unknown>[] } {
  const lines: Record<string, unknown>[] = [];
  const log = pino({ level: "warn" }, { write: (s: string) => lines.push(JSON.parse(s) as Record<string, unknown>) });
  return { log, lines };
}

describe("EventRecorder", () => {
  const server = new FakeApiServer();
  let client: EventClient;
  const events = new Map<string, Record<string, unknown>>();

  before(async () => {
    await server.start();
    client = eventClientFor(server.rest());
  });
  after(() => server.stop());
  beforeEach(() => {
    server.requests.length = 0;
    events.clear();
    // A minimal Event store: create adds, patch updates, unknown names are 404.
    server.handler = (req: RecordedRequest) => {
      const match = /^\/api\/v1\/namespaces\/([^/]+)\/events(?:\/([^/]+))?$/.exec(req.path);
      if (!match) return undefined;
      const body = req.body as Record<string, unknown>;
      if (req.method === "POST") {
        const name = (body.metadata as { name: string }).name;
        events.set(name, body);
        return { status: 201, body };
      }
      const name = match[2] ?? "";
      const existing = events.get(name);
      if (req.method === "PATCH") {
        if (!existing) return status(404, "NotFound", `events "${name}" not found`);
        const updated = { ...existing, ...body };
        events.set(name, updated);
        return { status: 200, body: updated };
      }
      return undefined;
    };
  });

  test("create: an Event under the given name; one that exists already (409) counts as told", async () => {
    const recorder = new EventRecorder({ client, log: pino({ level: "silent" }), instance: "pod-1" });
    const handler = server.handler;
    server.handler = (req: RecordedRequest) => {
      const name = (req.body as { metadata?: { name?: string } } | undefined)?.metadata?.name ?? "";
      if (req.method === "POST" && events.has(name))
        return status(409, "AlreadyExists", `events "${name}" already exists`);
      return handler?.(req);
    };
    assert.equal(await recorder.create(app, "Normal", "Promoted", "promoted web:2", "web.0123456789abcdef"), true);
    assert.equal(await recorder.create(app, "Normal", "Promoted", "promoted web:2", "web.0123456789abcdef"), true);
    assert.deepEqual([...events.keys()], ["web.0123456789abcdef"]);
    const event = events.get("web.0123456789abcdef") as { reason: string; count: number; involvedObject: unknown };
    assert.equal(event.reason, "Promoted");
    assert.equal(event.count, 1, "the repeat is not counted");
    assert.equal(server.requests.filter((r) => r.method === "PATCH").length, 0);
  });

  test("create: resolves to false (and logs) when the API server refuses the Event", async () => {
    const { log, lines } = capturingLogger();
    const recorder = new EventRecorder({ client, log });
    server.handler = () => status(403, "Forbidden", "events are held");
    assert.equal(
      await recorder.create(app, "Warning", "RolledBack", "rolled back web:2", "web.0123456789abcdef"),
      false,
    );
    assert.equal(lines.length, 1);
    assert.equal(lines[0]?.["msg"], "could not record event");
  });

  test("creates an Event in the object's namespace with source and involvedObject", async () => {
    const clock = new FakeClock(Date.UTC(2024, 4, 1, 12, 0, 0));
    const recorder = new EventRecorder({ client, log: pino({ level: "silent" }), clock, instance: "pod-1" });
    await recorder.record(app, "Normal", "TestStarted", "testing web:2 on the secondary");
    const [call] = server.calls();
    assert.equal(call?.method, "POST");
    assert.equal(call?.path, "/api/v1/namespaces/shop/events");
    const body = call?.body as Record<string, unknown>;
    assert.match((body.metadata as { name: string }).name, /^web\.[0-9a-f]+$/);
    assert.deepEqual(body.involvedObject, {
      apiVersion: "canaryapp.io/v1alpha1",
      kind: "CanaryApp",
      name: "web",
      namespace: "shop",
      uid: "u-1",
      resourceVersion: "5",
    });
    assert.equal(body.type, "Normal");
    assert.equal(body.reason, "TestStarted");
    assert.equal(body.message, "testing web:2 on the secondary");
    assert.deepEqual(body.source, { component: "canaryapp-controller", host: "pod-1" });
    assert.equal(body.reportingComponent, "canaryapp-controller");
    assert.equal(body.reportingInstance, "pod-1");
    assert.equal(body.count, 1);
    assert.equal(body.firstTimestamp, "2024-05-01T12:00:00.000Z");
    assert.equal(body.lastTimestamp, "2024-05-01T12:00:00.000Z");
  });

  test("an identical event within 10 minutes increments count and lastTimestamp", async () => {
    const clock = new FakeClock(Date.UTC(2024, 4, 1, 12, 0, 0));
    const recorder = new EventRecorder({ client, log: pino({ level: "silent" }), clock });
    await recorder.record(app, "Warning", "AnalysisFailed", "error rate 7% > 5%");
    await clock.advance(60_000);
    await recorder.record(app, "Warning", "AnalysisFailed", "error rate 7% > 5%");
    await clock.advance(9 * 60_000);
    await recorder.record(app, "Warning", "AnalysisFailed", "error rate 7% > 5%");
    assert.deepEqual(
      server.calls().map((c) => c.method),
      ["POST", "PATCH", "PATCH"],
    );
    const patch = server.calls()[2];
    assert.equal(patch?.contentType, "application/merge-patch+json");
    assert.deepEqual(patch?.body, { count: 3, lastTimestamp: "2024-05-01T12:10:00.000Z" });
    assert.equal(events.size, 1);
    const [stored] = events.values();
    assert.equal(stored?.count, 3);
  });

  test("a different message, reason or object makes a new Event", async () => {
    const recorder = new EventRecorder({ client, log: pino({ level: "silent" }), clock: new FakeClock() });
    await recorder.record(app, "Normal", "StepAdvanced", "weight 10");
    await recorder.record(app, "Normal", "StepAdvanced", "weight 20");
    await recorder.record(app, "Normal", "Paused", "weight 20");
    await recorder.record({ ...app, metadata: { ...app.metadata, name: "api" } }, "Normal", "Paused", "weight 20");
    assert.equal(events.size, 4);
  });

  test("after 10 minutes of quiet the same event starts a new Event", async () => {
    const clock = new FakeClock();
    const recorder = new EventRecorder({ client, log: pino({ level: "silent" }), clock });
    await recorder.record(app, "Normal", "Healthy", "ok");
    await clock.advance(10 * 60_000);
    await recorder.record(app, "Normal", "Healthy", "ok");
    assert.deepEqual(
      server.calls().map((c) => c.method),
      ["POST", "POST"],
    );
  });

  test("an Event that disappeared is created again", async () => {
    const clock = new FakeClock();
    const recorder = new EventRecorder({ client, log: pino({ level: "silent" }), clock });
    await recorder.record(app, "Normal", "Healthy", "ok");
    events.clear();
    await clock.advance(1000);
    await recorder.record(app, "Normal", "Healthy", "ok");
    assert.deepEqual(
      server.calls().map((c) => c.method),
      ["POST", "PATCH", "POST"],
    );
    assert.equal(events.size, 1);
  });

  test("concurrent identical records create one Event", async () => {
    const recorder = new EventRecorder({ client, log: pino({ level: "silent" }), clock: new FakeClock() });
    await Promise.all([1, 2, 3].map(() => recorder.record(app, "Normal", "Same", "same")));
    assert.equal(events.size, 1);
    const [stored] = events.values();
    assert.equal(stored?.count, 3);
  });

  test("the cache of remembered events is bounded", async () => {
    const recorder = new EventRecorder({
      client,
      log: pino({ level: "silent" }),
      clock: new FakeClock(),
      cacheSize: 2,
    });
    await recorder.record(app, "Normal", "A", "a");
    await recorder.record(app, "Normal", "B", "b");
    await recorder.record(app, "Normal", "C", "c"); // evicts A
    await recorder.record(app, "Normal", "A", "a");
    assert.equal(events.size, 4, "A was forgotten, so it was created again");
  });

  test("a failed write is logged, never thrown", async () => {
    server.handler = () => status(403, "Forbidden", 'events is forbidden: User "x" cannot create');
    const { log, lines } = capturingLogger();
    const recorder = new EventRecorder({ client, log, clock: new FakeClock() });
    await recorder.record(app, "Warning", "Oops", "m");
    assert.equal(lines.length, 1);
    assert.equal(lines[0]?.msg, "could not record event");
    assert.equal(lines[0]?.object, "CanaryApp shop/web");
    assert.match(String((lines[0]?.err as { message: string }).message), /forbidden/);
  });

  test("long messages are cut to 1024 characters", async () => {
    const recorder = new EventRecorder({ client, log: pino({ level: "silent" }), clock: new FakeClock() });
    await recorder.record(app, "Normal", "Long", "x".repeat(5000));
    const body = server.calls()[0]?.body as { message: string };
    assert.equal(body.message.length, 1024);
    assert.ok(body.message.endsWith("..."));
  });
});

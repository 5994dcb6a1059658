import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { pino } from "pino";
import type { CanaryApp, CanaryAppStatus } from "../api/types.js";
import { CONDITION } from "../api/types.js";
import { seedApp } from "../resources/fixtures.test-helpers.js";
import { CHILDREN_APPLIED } from "../rollout/conditions.js";
import type { PlannedEvent } from "../rollout/types.js";
import { applyMergePatch, mergePatchFrom } from "../kube/merge-patch.js";
import { StaleStatusError, StatusWriter, type StatusStore, type StatusWriterDeps, type ToldMemory } from "./writer.js";

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
function harness(options: { conflict?: boolean; failTell?: string[]; notices?: boolean; store?: StatusStore } = {}) {
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
    store: options.store ?? {
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

  describe("the first sighting of a step's route is held, not written (ADR 0008)", () => {
    const stepping = (extra: Partial<NonNullable<CanaryAppStatus["canary"]>> = {}): CanaryAppStatus => ({
      phase: "Progressing",
      canary: {
        image: "web:2",
        stage: "Stepping",
        step: 1,
        startedAt: "2026-11-27T11:00:00Z",
        stepStartedAt: "2026-11-27T11:59:00Z",
        failedChecks: 0,
        ...extra,
      },
    });
    const ROUTED = "2026-11-27T12:00:00Z";

    /**
     * One app on an API server as kube-apiserver keeps it: a status write is the merge patch from the status
     * the writer read to the one it plans (kube/cluster.ts), refused with 409 unless the resourceVersion it
     * read is the current one. `cache()` is the informer's copy at this moment; a copy kept from earlier is a
     * cache behind the writes since.
     */
    function apiServer(initial: CanaryAppStatus) {
      let stored = app(initial);
      let conflicts = 0;
      let writes = 0;
      const store: StatusStore = {
        replaceStatus: (read, status) => {
          if (read.metadata.resourceVersion !== stored.metadata.resourceVersion) {
            conflicts += 1;
            return Promise.reject(Object.assign(new Error("Conflict"), { code: 409, statusCode: 409 }));
          }
          writes += 1;
          const patch = mergePatchFrom(read.status ?? {}, status);
          const resourceVersion = String(Number(stored.metadata.resourceVersion) + 1);
          stored = {
            ...stored,
            metadata: { ...stored.metadata, resourceVersion },
            status: applyMergePatch(stored.status ?? {}, patch) as CanaryAppStatus,
          };
          return Promise.resolve(resourceVersion);
        },
      };
      return {
        store,
        cache: () => structuredClone(stored),
        status: () => stored.status,
        writes: () => writes,
        conflicts: () => conflicts,
      };
    }

    /**
     * The server at step 1, as this process wrote it: the step's decision, before its route was seen (its
     * Events left out: a plan's status carries the last transition's record, which these plans do not).
     */
    async function afterDecision() {
      const server = apiServer(stepping({ step: 0 }));
      const { writer } = harness({ store: server.store });
      await reconcile(writer, server.cache(), stepping());
      return { server, writer };
    }

    /** One reconcile planned from `cached`: the copy of it it plans from, after the plan is recorded. */
    async function reconcile(
      writer: StatusWriter,
      cached: CanaryApp,
      status: CanaryAppStatus,
      events: PlannedEvent[] = [],
    ): Promise<CanaryApp> {
      const copy = structuredClone(cached);
      writer.withHeld(copy);
      await writer.record(copy, { status, events }, NOW, log);
      return copy;
    }

    /** The copy of the cached app the next reconcile plans from. */
    const planned = (writer: StatusWriter, cached: CanaryApp) => {
      const copy = structuredClone(cached);
      writer.withHeld(copy);
      return copy;
    };

    test("a plan whose only news is the clock writes nothing; the next plan's copy of the app has the clock", async () => {
      const { server, writer } = await afterDecision();
      const copy = await reconcile(writer, server.cache(), stepping({ stepRoutedAt: ROUTED }));
      assert.equal(server.writes(), 1, "the decision only");
      assert.equal(copy.status?.canary?.stepRoutedAt, ROUTED, "this reconcile goes on with the clock");
      const next = planned(writer, server.cache());
      assert.equal(next.status?.canary?.stepRoutedAt, ROUTED, "the next reconcile plans with the clock held");
      await reconcile(writer, server.cache(), stepping({ stepRoutedAt: ROUTED }));
      assert.equal(server.writes(), 1, "the same plan again: nothing to write");
    });

    test("the clock reaches the API server with the app's next write, and the hold ends there", async () => {
      const { server, writer } = await afterDecision();
      await reconcile(writer, server.cache(), stepping({ stepRoutedAt: ROUTED }));
      const paused = stepping({ stepRoutedAt: ROUTED, pausedAt: "2026-11-27T12:00:30Z" });
      await reconcile(writer, server.cache(), paused);
      assert.equal(server.writes(), 2);
      // The write is a patch from the status read: the clock is in it although the plan's copy had it already.
      assert.deepEqual(server.status(), paused);
      assert.equal(planned(writer, server.cache()).status?.canary?.stepRoutedAt, ROUTED, "stored, not held");
    });

    test("the clock reaches the API server with a write after acting", async () => {
      const { server, writer } = await afterDecision();
      const copy = await reconcile(writer, server.cache(), stepping({ stepRoutedAt: ROUTED }));
      await writer.recordActed(
        copy,
        { rejection: { reason: "ChildRejected", message: "bad" }, createdPrimary: null },
        true,
        NOW,
      );
      assert.equal(server.writes(), 2);
      assert.equal(server.status()?.canary?.stepRoutedAt, ROUTED);
    });

    test("a plan made from a cache behind this process's last write writes the clock: the write loses and it plans again", async () => {
      const server = apiServer(stepping({ step: 0 }));
      const { writer } = harness({ store: server.store });
      await reconcile(writer, server.cache(), stepping());
      const behind = server.cache();
      await reconcile(writer, server.cache(), stepping({ pausedAt: "2026-11-27T12:00:10Z" }));
      assert.equal(server.writes(), 2);
      // The cache still shows the first write: a plan from it is not the status this process knows is stored.
      await assert.rejects(reconcile(writer, behind, stepping({ stepRoutedAt: ROUTED })), StaleStatusError);
      assert.equal(server.conflicts(), 1);
      assert.equal(planned(writer, server.cache()).status?.canary?.stepRoutedAt, undefined, "nothing held");
    });

    test("a plan made from a status this process did not write writes the clock", async () => {
      const server = apiServer(stepping());
      const { writer } = harness({ store: server.store });
      await reconcile(writer, server.cache(), stepping({ stepRoutedAt: ROUTED }));
      assert.equal(server.writes(), 1);
      assert.equal(server.status()?.canary?.stepRoutedAt, ROUTED);
    });

    test("a transition with Events is written with the clock at once", async () => {
      const { server, writer } = await afterDecision();
      const event: PlannedEvent = { type: "Normal", reason: "Resumed", message: "resumed" };
      await reconcile(writer, server.cache(), stepping({ stepRoutedAt: ROUTED }), [event]);
      assert.equal(server.writes(), 2);
      assert.equal(server.status()?.canary?.stepRoutedAt, ROUTED);
    });

    test("a plan that lets go of the clock writes nothing: the stored status is already without it", async () => {
      const { server, writer } = await afterDecision();
      await reconcile(writer, server.cache(), stepping({ stepRoutedAt: ROUTED }));
      await reconcile(writer, server.cache(), stepping());
      assert.equal(server.writes(), 1);
      assert.equal(planned(writer, server.cache()).status?.canary?.stepRoutedAt, undefined);
    });

    test("a cached app at another resourceVersion or step, or with a clock of its own, ends the hold; so does the app's deletion", async () => {
      const { server, writer } = await afterDecision();
      const sighted = () => reconcile(writer, server.cache(), stepping({ stepRoutedAt: ROUTED }));
      const cached = server.cache();

      await sighted();
      const changed = structuredClone(cached);
      changed.metadata.resourceVersion = "99";
      writer.withHeld(changed);
      assert.equal(changed.status?.canary?.stepRoutedAt, undefined, "another resourceVersion");
      assert.equal(planned(writer, cached).status?.canary?.stepRoutedAt, undefined, "the hold ended with it");

      await sighted();
      const moved = structuredClone(cached);
      moved.status = stepping({ step: 2 });
      writer.withHeld(moved);
      assert.equal(moved.status.canary?.stepRoutedAt, undefined, "another step");
      assert.equal(
        planned(writer, cached).status?.canary?.stepRoutedAt,
        undefined,
        "the hold ended with the other step",
      );

      await sighted();
      const own = structuredClone(cached);
      own.status = stepping({ stepRoutedAt: "2026-11-27T11:59:30Z" });
      writer.withHeld(own);
      assert.equal(own.status.canary?.stepRoutedAt, "2026-11-27T11:59:30Z", "the stored clock wins");

      await sighted();
      writer.forget("shop/web");
      assert.equal(planned(writer, cached).status?.canary?.stepRoutedAt, undefined);
    });
  });
});

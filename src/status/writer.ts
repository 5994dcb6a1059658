/**
 * The one place a CanaryApp's status is assembled and written. The planner decides what the status says
 * (rollout/); this adds what a plan cannot know and writes it:
 * - the Events of a transition, recorded with it and then told (transition-events.ts, ADR 0001);
 * - the outbox of notices for the app's receivers (outbox.ts);
 * - the outcome of acting: a child the API server rejected, a primary just created (rollout/reported.ts).
 * Every write is a replace guarded by resourceVersion: a reconcile that planned from a stale cache loses
 * (StaleStatusError) and plans again instead of overwriting newer state.
 */
import type { Logger } from "pino";
import type { CanaryApp, CanaryAppStatus, CanaryState } from "../api/types.js";
import { objectKey } from "../object-keys.js";
import { isConflict } from "../kube/errors.js";
import { CHILDREN_APPLIED } from "../rollout/conditions.js";
import { childrenApplied, primaryCreated, statusEqual } from "../rollout/reported.js";
import type { PlannedEvent, WorkloadObservation } from "../rollout/types.js";
import { timestamp } from "../time/timestamps.js";
import type { ReconcileFailure } from "./outbox.js";
import { withNotices } from "./outbox.js";
import { stale, toTell, told, withTransition } from "./transition-events.js";

/** Thrown when the status write lost a race; the key is simply reconciled again on fresh state. */
export class StaleStatusError extends Error {
  constructor(key: string, options?: { cause?: unknown }) {
    super(`CanaryApp ${key}: status changed since it was read`, options);
    this.name = "StaleStatusError";
  }
}

/** What the writer needs of the API server. */
export interface StatusStore {
  /**
   * Replace the status subresource, guarded by the app's resourceVersion; resolves with the new one. The write
   * is a merge patch from `app.status`, which must be the status the API server holds at that resourceVersion.
   */
  replaceStatus(app: CanaryApp, status: CanaryAppStatus): Promise<string | undefined>;
}

/** What the writer needs to tell a transition's Events. */
export interface TransitionTeller {
  /** Creates the Event named `name` unless it exists; resolves to whether it exists afterwards. */
  tell(app: CanaryApp, event: PlannedEvent, name: string): Promise<boolean>;
}

/** Which transition of each app this process has told every Event of (canary/ahead-of-cache.ts). */
export interface ToldMemory {
  toldTransition(appKey: string, transition: string | undefined): boolean;
  told(appKey: string, transition: string | undefined): void;
}

/** The notification side: which apps have receivers, and how far each app's outbox has been delivered. */
export interface NoticeOutbox {
  enabled(app: CanaryApp): boolean;
  delivered(appKey: string): number | undefined;
}

export interface StatusWriterDeps {
  store: StatusStore;
  events: TransitionTeller;
  told: ToldMemory;
  /** Absent: no app is notified. */
  notices?: NoticeOutbox;
  /** An Event was told (for the log and metrics). */
  onEvent(app: CanaryApp, event: PlannedEvent, log: Logger): void;
}

/** What acting on a plan came to. */
export interface Acted {
  /** The API server rejected a child as invalid, or an object in the way is not the app's. */
  rejection?: { reason: "ChildRejected" | "ChildNotOwned"; message: string };
  /** The primary workload this reconcile created, as the workload port observes it; null when it created none. */
  createdPrimary: WorkloadObservation | null;
}

/**
 * The first sighting of a step's route (`canary.stepRoutedAt`, ADR 0008) that this process holds instead of
 * writing it at once, for the step of the test it was seen in (`stepOf`) and the stored status it was planned
 * from (`resourceVersion`, one this process wrote).
 */
interface HeldClock {
  step: string;
  stepRoutedAt: string;
  resourceVersion: string;
}

export class StatusWriter {
  /** Per app, the step clock this process holds until the app's next status write (ADR 0008, "Since"). */
  readonly #held = new Map<string, HeldClock>();
  /** Per app, the resourceVersion this process's last status write returned. */
  readonly #written = new Map<string, string>();

  constructor(private readonly deps: StatusWriterDeps) {}

  /**
   * Puts the step clock this process holds on the copy of the app a reconcile plans from: the status as this
   * process knows it. Any other cached app than the one the clock was held on (another resourceVersion: a
   * write since, or a cache still behind) ends the hold, and the plan times the step from its own sighting.
   */
  withHeld(app: CanaryApp): void {
    const key = objectKey(app) ?? "";
    const held = this.#held.get(key);
    if (held === undefined) return;
    const canary = app.status?.canary;
    if (
      app.metadata.resourceVersion !== held.resourceVersion ||
      canary === undefined ||
      canary.stepRoutedAt !== undefined ||
      stepOf(canary) !== held.step
    ) {
      this.#held.delete(key);
      return;
    }
    canary.stepRoutedAt = held.stepRoutedAt;
  }

  /** The app is gone. */
  forget(appKey: string): void {
    this.#held.delete(appKey);
    this.#written.delete(appKey);
  }

  /**
   * Persists the planned status with its Events (status.lastEvents), then tells them: the decision is on
   * record before anyone hears of it, and a controller killed in between leaves them for the next reconcile.
   * Resolves to whether the recorded Events all exist now (the next status write then marks them told).
   */
  async record(
    app: CanaryApp,
    plan: { status: CanaryAppStatus; events: readonly PlannedEvent[] },
    now: Date,
    log: Logger,
  ): Promise<boolean> {
    // Events of an earlier transition not known to exist yet are told before this one's replace them.
    if (plan.events.length > 0) await this.tell(app, log, now);
    const status = withTransition(
      app.status ?? {},
      this.noticed(app, plan.status, now, plan.events),
      plan.events,
      timestamp(now),
    );
    await this.persist(app, status);
    return this.tell(app, log, now);
  }

  /**
   * Persists what acting showed: ChildrenApplied (and Ready) after a rejection or the first apply after one,
   * Ready once the primary was created, a notice for a new rejection, and the told mark of the Events when
   * the app needs a write anyway (`toldAll`: the Events recorded before acting all exist now).
   */
  async recordActed(app: CanaryApp, acted: Acted, toldAll: boolean, now: Date): Promise<void> {
    const applied = primaryCreated(
      childrenApplied(app.status ?? {}, acted.rejection?.message, now),
      acted.rejection === undefined ? acted.createdPrimary : null,
      app.metadata.generation,
      now,
    );
    const next = this.noticed(app, applied, now, [], newRejection(app, acted.rejection));
    // The Events are marked told only in a write the app needs anyway (see AheadOfCache).
    await this.persist(app, toldAll && !statusEqual(app.status, next) ? told(next) : next);
  }

  /** Tells the Events the app's status records as pending; resolves to whether they all exist now. */
  private async tell(app: CanaryApp, log: Logger, now: Date): Promise<boolean> {
    const last = app.status?.lastEvents;
    if (last?.pending === undefined) return true;
    const key = objectKey(app) ?? "";
    const transition = `${app.metadata.uid ?? ""}/${last.seq}/${last.at}`;
    if (this.deps.told.toldTransition(key, transition)) return true;
    if (stale(last, now)) {
      // Said once per process: the mark stays pending in status until the app's next write.
      log.warn({ transition: last.seq, at: last.at }, "the last transition's Events are too old to tell again");
      this.deps.told.told(key, transition);
      return true;
    }
    let all = true;
    for (const { name, event } of toTell(app, now)) {
      if (!(await this.deps.events.tell(app, event, name))) {
        all = false;
        continue;
      }
      this.deps.onEvent(app, event, log);
    }
    if (all) this.deps.told.told(key, transition);
    return all;
  }

  /**
   * `status` with the app's outbox brought up to date (notices for `events` and `failure` added, those
   * delivered removed), when the app has receivers; written with the status, before anything is sent.
   */
  private noticed(
    app: CanaryApp,
    status: CanaryAppStatus,
    now: Date,
    events: readonly PlannedEvent[],
    failure?: ReconcileFailure,
  ): CanaryAppStatus {
    const notices = this.deps.notices;
    if (notices === undefined || !notices.enabled(app)) return status;
    return withNotices(app, app.status ?? {}, status, {
      events,
      ...(failure !== undefined ? { failure } : {}),
      delivered: notices.delivered(objectKey(app) ?? ""),
      at: timestamp(now),
    });
  }

  /**
   * Writes `status` if it differs from the app's, and keeps `app` current (status, resourceVersion). A status
   * whose only news is the first sighting of the step's route is not written when it was planned from the
   * status this process last wrote: the clock is held (`withHeld`) and rides on the app's next write. Planned
   * from anything else (a cache behind that write, a status written by someone else, a process that has
   * written nothing yet), it is written, guarded as every write: a stale plan loses and plans again. Losing a
   * held clock (a restart, another replica taking the app) only times the step again from the next
   * sighting: longer, never shorter (ADR 0008).
   */
  private async persist(app: CanaryApp, status: CanaryAppStatus): Promise<void> {
    if (statusEqual(app.status, status)) return;
    const key = objectKey(app) ?? "";
    // What the API server holds: a held clock is on the app's copy only. The write is a patch from this.
    const stored = this.#held.has(key) ? withoutClock(app.status ?? {}) : (app.status ?? {});
    if (statusEqual(stored, status)) {
      // The plan let go of the clock held (the route was seen carrying something else): the stored status is right.
      this.#held.delete(key);
      app.status = status;
      return;
    }
    const clock = status.canary?.stepRoutedAt;
    const resourceVersion = app.metadata.resourceVersion;
    if (
      clock !== undefined &&
      resourceVersion !== undefined &&
      resourceVersion === this.#written.get(key) &&
      stored.canary !== undefined &&
      stored.canary.stepRoutedAt === undefined &&
      statusEqual(stored, withoutClock(status))
    ) {
      this.#held.set(key, { step: stepOf(stored.canary), stepRoutedAt: clock, resourceVersion });
      app.status = status;
      return;
    }
    try {
      const written = await this.deps.store.replaceStatus({ ...app, status: stored }, status);
      this.#held.delete(key);
      app.status = status;
      if (written === undefined) this.#written.delete(key);
      else {
        app.metadata.resourceVersion = written;
        this.#written.set(key, written);
      }
    } catch (error) {
      if (isConflict(error)) throw new StaleStatusError(key, { cause: error });
      throw error;
    }
  }
}

/** The step of a test a held clock belongs to. */
function stepOf(canary: CanaryState): string {
  return JSON.stringify([canary.image, canary.startedAt, canary.stage, canary.step]);
}

/** `status` without the step clock. */
function withoutClock(status: CanaryAppStatus): CanaryAppStatus {
  if (status.canary?.stepRoutedAt === undefined) return status;
  const { stepRoutedAt: _clock, ...canary } = status.canary;
  return { ...status, canary };
}

/** A rejection of a child that the status did not name yet: one notice per new rejection. */
function newRejection(
  app: CanaryApp,
  rejection: { reason: string; message: string } | undefined,
): ReconcileFailure | undefined {
  if (rejection === undefined) return undefined;
  const named = app.status?.conditions?.some(
    (c) => c.type === CHILDREN_APPLIED && c.status === "False" && c.message === rejection.message,
  );
  return named === true ? undefined : rejection;
}

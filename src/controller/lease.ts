/**
 * The pure part of leader election: who holds a coordination.k8s.io/v1 Lease, whether it may be taken at
 * a given time, and what the next spec is. No I/O, no clock: times are passed in (milliseconds). Two kinds of
 * time meet here: the MicroTimes written in a Lease (wall clock, for people and for the record) and this
 * replica's monotonic readings, by which alone expiry is decided.
 */

/** A coordination.k8s.io/v1 Lease spec as it travels: MicroTimes are strings (Dates are read too). */
export interface LeaseSpec {
  holderIdentity?: string | undefined;
  leaseDurationSeconds?: number | undefined;
  acquireTime?: string | Date | undefined;
  renewTime?: string | Date | undefined;
  leaseTransitions?: number | undefined;
}

/** A coordination.k8s.io/v1 Lease: the fields leader election reads and writes. */
export interface Lease {
  apiVersion?: string;
  kind?: string;
  metadata?: { name?: string; namespace?: string; resourceVersion?: string; labels?: Record<string, string> };
  spec?: LeaseSpec;
}

/**
 * A MicroTime as the API server requires it: RFC 3339 with exactly six fractional digits
 * ("2024-01-01T12:00:00.123000Z"). Milliseconds are all a JavaScript clock has.
 */
export function microTime(ms: number): string {
  return new Date(ms).toISOString().replace(/Z$/, "000Z");
}

/** A Lease spec with times as epoch milliseconds. */
export interface LeaseRecord {
  holderIdentity?: string;
  leaseDurationSeconds?: number;
  acquireTimeMs?: number;
  renewTimeMs?: number;
  leaseTransitions?: number;
}

function toMs(time: Date | string | undefined): number | undefined {
  if (time === undefined) return undefined;
  const ms = time instanceof Date ? time.getTime() : Date.parse(time);
  return Number.isNaN(ms) ? undefined : ms;
}

/**
 * Reads a Lease spec. The client hands MicroTime fields back as strings (its deserialiser does not know the
 * type) though they are declared as Dates; both are accepted.
 */
export function recordFromSpec(spec: LeaseSpec | undefined): LeaseRecord {
  return {
    holderIdentity: spec?.holderIdentity === "" ? undefined : spec?.holderIdentity,
    leaseDurationSeconds: spec?.leaseDurationSeconds,
    acquireTimeMs: toMs(spec?.acquireTime),
    renewTimeMs: toMs(spec?.renewTime),
    leaseTransitions: spec?.leaseTransitions,
  };
}

/** Writes a Lease spec, its times as MicroTimes. */
export function specFromRecord(record: LeaseRecord): LeaseSpec {
  return {
    holderIdentity: record.holderIdentity,
    leaseDurationSeconds: record.leaseDurationSeconds,
    acquireTime: record.acquireTimeMs !== undefined ? microTime(record.acquireTimeMs) : undefined,
    renewTime: record.renewTimeMs !== undefined ? microTime(record.renewTimeMs) : undefined,
    leaseTransitions: record.leaseTransitions,
  };
}

/**
 * What this replica has seen of a Lease: the record it last read and when, by its own monotonic clock, it first
 * read that record. The times in the record are the holder's clock and are never compared with ours.
 */
export interface LeaseObservation {
  /** Changes with every write to the Lease: its resourceVersion and its spec. */
  version: string;
  record: LeaseRecord;
  /** This replica's monotonic time (ms) at which it first read `version`. */
  sinceMs: number;
}

/** What identifies one write of a Lease. */
function versionOf(lease: Lease): string {
  const r = recordFromSpec(lease.spec);
  return JSON.stringify([
    lease.metadata?.resourceVersion,
    r.holderIdentity,
    r.leaseDurationSeconds,
    r.acquireTimeMs,
    r.renewTimeMs,
    r.leaseTransitions,
  ]);
}

/**
 * Notes a read of `lease` at `nowMs` (this replica's monotonic clock, taken once the read has returned: the
 * record was written before that). The same record as before keeps its time; a changed one, or one never read
 * before, counts from now — so a replica that has just started waits a whole lease duration before it may take a
 * Lease someone holds, as client-go does.
 */
export function observeLease(previous: LeaseObservation | undefined, lease: Lease, nowMs: number): LeaseObservation {
  const version = versionOf(lease);
  if (previous !== undefined && previous.version === version) return previous;
  return { version, record: recordFromSpec(lease.spec), sinceMs: nowMs };
}

/**
 * A Lease has expired for this replica when the record it reads has not changed for leaseDurationSeconds of this
 * replica's own clock: `sinceMs + leaseDurationSeconds < nowMs` (client-go's `tryAcquireOrRenew`, which keeps
 * `observedTime`). The holder's renewTime is not read, so a holder whose clock is off by any amount keeps its
 * Lease while it renews, and loses it one duration after its last renewal was seen. A record without a duration
 * counts as expired.
 *
 * Safe as long as clocks run at about the same pace: a holder stops acting renewDeadline after it *sent* its
 * last renewal, and others read that renewal after it was written, so they wait at least leaseDuration from a
 * later point.
 */
export function hasExpired(observation: LeaseObservation, nowMs: number): boolean {
  const seconds = observation.record.leaseDurationSeconds;
  if (seconds === undefined) return true;
  return observation.sinceMs + seconds * 1000 < nowMs;
}

/**
 * Whether a Lease has expired by its holder's renewTime read on the caller's clock: renewTime + leaseDuration <
 * now (a Lease without either counts as expired). Right only for an onlooker whose clock is the holders' own — a
 * test or bench reading the Leases of replicas on its machine. Replicas never decide by it (they use
 * `hasExpired`): a holder's clock set fast keeps its Leases that much too long for the others, and a reader's clock
 * set fast (or a holder's set slow) shortens them by as much — by more than 7 s or so (15 s less the 6 to 8 s
 * between a share's renewals), a replica takes Leases that are being renewed.
 */
export function isLeaseExpired(record: LeaseRecord, nowMs: number): boolean {
  if (record.renewTimeMs === undefined || record.leaseDurationSeconds === undefined) return true;
  return record.renewTimeMs + record.leaseDurationSeconds * 1000 < nowMs;
}

/** How long (ms of this replica's clock) the Lease has read the same. */
export function unchangedFor(observation: LeaseObservation, nowMs: number): number {
  return nowMs - observation.sinceMs;
}

/** Whether `identity` may write the Lease at `nowMs` (monotonic): it is free, already ours, or expired. */
export function canAcquire(observation: LeaseObservation, identity: string, nowMs: number): boolean {
  const holder = observation.record.holderIdentity;
  return holder === undefined || holder === identity || hasExpired(observation, nowMs);
}

/**
 * The record `identity` writes to take or renew the lease at `nowMs`: renewing keeps acquireTime and the
 * transition count; taking over from someone else (or from nobody, after a release) sets acquireTime and
 * counts a transition when there was a previous holder record.
 */
export function acquiredRecord(
  previous: LeaseRecord | undefined,
  identity: string,
  nowMs: number,
  leaseDurationMs: number,
): LeaseRecord {
  const leaseDurationSeconds = Math.max(1, Math.ceil(leaseDurationMs / 1000));
  if (previous !== undefined && previous.holderIdentity === identity) {
    return { ...previous, leaseDurationSeconds, renewTimeMs: nowMs };
  }
  return {
    holderIdentity: identity,
    leaseDurationSeconds,
    acquireTimeMs: nowMs,
    renewTimeMs: nowMs,
    leaseTransitions: previous === undefined ? 0 : (previous.leaseTransitions ?? 0) + 1,
  };
}

/**
 * The record a holder writes on graceful shutdown: no holder and a one-second duration, so that another
 * replica takes the lease at its next attempt instead of waiting out the full duration (client-go's
 * ReleaseOnCancel).
 */
export function releasedRecord(previous: LeaseRecord, nowMs: number): LeaseRecord {
  return {
    holderIdentity: undefined,
    leaseDurationSeconds: 1,
    acquireTimeMs: nowMs,
    renewTimeMs: nowMs,
    leaseTransitions: previous.leaseTransitions,
  };
}

/**
 * The pure part of leader election: who holds a coordination.k8s.io/v1 Lease, whether it may be taken at
 * a given time, and what the next spec is. No I/O, no clock: times are passed in (milliseconds).
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
 * A lease has expired when its holder's last renewal is more than its duration ago:
 * renewTime + leaseDurationSeconds < now. A lease without renewTime or duration counts as expired.
 *
 * This compares the holder's clock (renewTime) with ours, so it assumes the replicas' clocks agree to well
 * within leaseDuration − renewDeadline (5 s by default), as NTP-synced nodes do.
 */
export function isLeaseExpired(record: LeaseRecord, nowMs: number): boolean {
  if (record.renewTimeMs === undefined || record.leaseDurationSeconds === undefined) return true;
  return record.renewTimeMs + record.leaseDurationSeconds * 1000 < nowMs;
}

/** Whether `identity` may write the lease at `nowMs`: it is free, already ours, or expired. */
export function canAcquire(record: LeaseRecord, identity: string, nowMs: number): boolean {
  const holder = record.holderIdentity;
  return holder === undefined || holder === identity || isLeaseExpired(record, nowMs);
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

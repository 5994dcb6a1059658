/**
 * What every member of a shard group writes, sharded or not (ADR 0016, ADR 0024): its membership Lease, labelled
 * with the share count it runs, the epoch when it moves it to that count, and the deletion of its membership on a
 * graceful stop. A sharded replica writes them through ShardLeaseWrites (src/controller/shard-lease-writes.ts),
 * which adds the shares; the unsharded leader through its EpochGate (src/controller/epoch-gate.ts), as a member
 * of count 1. So a member Lease or the epoch looks the same whoever wrote it. Each write replaces a Lease at the
 * resourceVersion read, so of two replicas racing for one exactly one wins.
 */
import type { Logger } from "pino";
import { isConflict, toError } from "../kube/errors.js";
import { epochLeaseName, parseCount } from "./epoch.js";
import type { ShardLeaseClient } from "./leader-election.js";
import { acquiredRecord, recordFromSpec, specFromRecord, type Lease } from "./lease.js";
import { EPOCH_LOG, SHARD_LABELS, shardLabels, shardLease, type LeaseRole } from "./shard-leases.js";

export interface MemberWritesOptions {
  /** See ShardElectionOptions. */
  namespace: string;
  name: string;
  /** The share count this replica runs: 1 for the unsharded leader. */
  shares: number;
  identity: string;
  leaseDurationMs: number;
  renewAfterMs: number;
  client: ShardLeaseClient;
  /** Times when a write was sent (monotonic). */
  elapsed: () => number;
  log: Logger;
  /** The name of this replica's membership Lease. */
  memberName: string;
}

/** The writes of one replica to its membership Lease and its group's epoch. */
export class MemberWrites {
  /** When the membership Lease was last written by this process (monotonic), if it was. */
  private memberRenewedAt: number | undefined;

  constructor(protected readonly options: MemberWritesOptions) {}

  /** Whether the membership Lease is due at `at` (monotonic): not yet written by this process, or renewAfter ago. */
  membershipDue(at: number): boolean {
    return this.memberRenewedAt === undefined || at - this.memberRenewedAt >= this.options.renewAfterMs;
  }

  /**
   * Creates or renews this replica's membership Lease (`lease`, as read at `readAt`), labelled with its count; not
   * written again while it is not due and names this replica under the right count. Resolves the Lease as it
   * stands now: as written, as read when nothing was due, undefined when the write failed (read it again first).
   */
  async renewMembership(lease: Lease | undefined, now: number, readAt: number): Promise<Lease | undefined> {
    const { client, identity, leaseDurationMs } = this.options;
    const record = recordFromSpec(lease?.spec);
    if (
      lease !== undefined &&
      record.holderIdentity === identity &&
      lease.metadata?.labels?.[SHARD_LABELS.count] === String(this.options.shares) &&
      !this.membershipDue(readAt)
    ) {
      return lease;
    }
    try {
      const spec = specFromRecord(acquiredRecord(lease ? record : undefined, identity, now, leaseDurationMs));
      const sent = this.options.elapsed();
      const written =
        lease === undefined
          ? await client.create(this.leaseObject(this.options.memberName, "member", spec))
          : // Labelled again: the same identity may have run another count before.
            await client.replace({ ...lease, metadata: { ...lease.metadata, labels: this.labels("member") }, spec });
      this.memberRenewedAt = sent;
      return written;
    } catch (error) {
      // A conflict: written by someone else since it was read; the next read says by whom.
      if (!isConflict(error)) this.options.log.warn({ err: toError(error) }, "could not renew the membership Lease");
      return undefined;
    }
  }

  /**
   * Records this replica's count as the one in force (ADR 0024), at the resourceVersion listed: of two
   * replicas moving it, one wins. Nobody acts under it before a later list has shown it.
   */
  async moveEpoch(lease: Lease | undefined, now: number): Promise<boolean> {
    const { client, name, shares } = this.options;
    const previous = recordFromSpec(lease?.spec);
    const spec = specFromRecord({
      holderIdentity: `shares=${shares}`,
      acquireTimeMs: now,
      renewTimeMs: now,
      leaseTransitions: lease === undefined ? 0 : (previous.leaseTransitions ?? 0) + 1,
    });
    try {
      if (lease === undefined) await client.create(this.leaseObject(epochLeaseName(name), "epoch", spec));
      else await client.replace({ ...lease, metadata: { ...lease.metadata, labels: this.labels("epoch") }, spec });
    } catch (error) {
      if (!isConflict(error)) this.options.log.warn({ err: toError(error) }, "could not move the sharding epoch");
      return false;
    }
    this.options.log.info(
      { shares, from: parseCount(lease?.metadata?.labels?.[SHARD_LABELS.count]) ?? null, by: this.options.identity },
      EPOCH_LOG.moved,
    );
    return true;
  }

  /**
   * Deletes this replica's membership Lease (`lease`, as read) on a graceful stop, at the version read and only
   * if it still names this replica. Throws what the API server answers.
   */
  async leave(lease: Lease | undefined): Promise<void> {
    if (lease === undefined || recordFromSpec(lease.spec).holderIdentity !== this.options.identity) return;
    await this.options.client.delete(this.options.namespace, this.options.memberName, lease.metadata?.resourceVersion);
  }

  private labels(role: LeaseRole): Record<string, string> {
    return shardLabels(this.options.name, role, this.options.shares);
  }

  /** A new Lease of the group, labelled with `role` and this replica's count. */
  protected leaseObject(leaseName: string, role: LeaseRole, spec: Lease["spec"]): Lease {
    return shardLease(this.options.namespace, this.options.name, this.options.shares, leaseName, role, spec);
  }
}

/**
 * A replica's writes to its shard group's Leases (ADR 0016, ADR 0024): its membership, the shares it takes,
 * renews, releases or frees, the epoch it moves, the Leases it deletes. Each replaces a Lease at the
 * resourceVersion just listed, so of two replicas racing for one exactly one wins. Which to write is the
 * ShardElector's round (src/controller/shard-election.ts); a share taken or renewed is noted in its HeldShares.
 */
import type { Logger } from "pino";
import type { Clock } from "../time/clock.js";
import { isConflict, toError } from "../kube/errors.js";
import { epochLeaseName, parseCount } from "./epoch.js";
import type { HeldShares } from "./held-shares.js";
import type { ShardLeaseClient } from "./leader-election.js";
import { acquiredRecord, recordFromSpec, releasedRecord, specFromRecord, type Lease } from "./lease.js";
import {
  EPOCH_LOG,
  SHARD_LABELS,
  shardLabels,
  shardLease,
  shareLeaseName,
  termOf,
  type LeaseRole,
} from "./shard-leases.js";

export interface ShardLeaseWritesOptions {
  /** See ShardElectionOptions. */
  namespace: string;
  name: string;
  shares: number;
  identity: string;
  leaseDurationMs: number;
  renewAfterMs: number;
  client: ShardLeaseClient;
  /** Written into the Leases for people to read. */
  clock: Clock;
  /** Times when a write was sent (monotonic). */
  elapsed: () => number;
  log: Logger;
  /** The name of this replica's membership Lease. */
  memberName: string;
  /** The shares this replica holds: a share taken or renewed is noted there. */
  held: HeldShares;
}

/** The writes of one replica to the Leases of its group. */
export class ShardLeaseWrites {
  /** When the membership Lease was last written by this process (monotonic), if it was. */
  private memberRenewedAt: number | undefined;

  constructor(private readonly options: ShardLeaseWritesOptions) {}

  /**
   * Creates or renews this replica's membership Lease (`lease`, as listed), labelled with its count; not written
   * again while its last renewal by this process is recent and its count label right.
   */
  async renewMembership(lease: Lease | undefined, now: number, readAt: number): Promise<void> {
    const { client, identity, leaseDurationMs } = this.options;
    const record = recordFromSpec(lease?.spec);
    const count = String(this.options.shares);
    if (
      lease !== undefined &&
      record.holderIdentity === identity &&
      lease.metadata?.labels?.[SHARD_LABELS.count] === count &&
      this.memberRenewedAt !== undefined &&
      readAt - this.memberRenewedAt < this.options.renewAfterMs
    ) {
      return;
    }
    try {
      const spec = specFromRecord(acquiredRecord(lease ? record : undefined, identity, now, leaseDurationMs));
      const sent = this.options.elapsed();
      if (lease === undefined) await client.create(this.leaseObject(this.options.memberName, "member", spec));
      // Labelled again: the same identity may have run another count before.
      else await client.replace({ ...lease, metadata: { ...lease.metadata, labels: this.labels("member") }, spec });
      this.memberRenewedAt = sent;
    } catch (error) {
      this.options.log.warn({ err: toError(error) }, "could not renew the membership Lease");
    }
  }

  /** Takes (or takes again after a restart) a share; a 409 means another replica was faster. */
  async take(share: number, lease: Lease | undefined, now: number): Promise<void> {
    const { client, name, identity, leaseDurationMs } = this.options;
    const previous = lease ? recordFromSpec(lease.spec) : undefined;
    // A share this process does not hold is a new term even if a Lease still names this identity (a restart).
    const base = previous?.holderIdentity === identity ? { ...previous, holderIdentity: undefined } : previous;
    const record = acquiredRecord(base, identity, now, leaseDurationMs);
    const sent = this.options.elapsed();
    try {
      const spec = specFromRecord(record);
      const leaseName = shareLeaseName(name, share, this.options.shares);
      if (lease === undefined) await client.create(this.leaseObject(leaseName, "share", spec));
      else await client.replace({ ...lease, spec });
    } catch (error) {
      if (!isConflict(error)) this.options.log.warn({ err: toError(error), share }, "could not take a share");
      return;
    }
    // Not used yet: the next round confirms it (ADR 0024), by a list made after this write that shows the
    // share still held under this term and the epoch in force this replica's count.
    this.options.held.set(share, { term: termOf(record), renewedAt: sent, confirmed: false });
    this.options.log.debug(
      { share, shares: this.options.shares, term: termOf(record), from: previous?.holderIdentity },
      "claimed a share",
    );
  }

  /**
   * Records this replica's count as the one in force (ADR 0024), at the resourceVersion listed: of two
   * replicas moving it, one wins. Nobody acts under it before a later round has listed it.
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

  /** Renews a share held. The renewal counts from when it is sent (the round's earlier writes may have been slow). */
  async renew(share: number, lease: Lease): Promise<void> {
    const { identity, clock, leaseDurationMs } = this.options;
    const sent = this.options.elapsed();
    const record = acquiredRecord(recordFromSpec(lease.spec), identity, clock.now(), leaseDurationMs);
    try {
      await this.options.client.replace({ ...lease, spec: specFromRecord(record) });
      this.options.held.renewedAt(share, sent, termOf(record));
    } catch (error) {
      // A conflict means someone else wrote the Lease: the next list tells who holds it.
      this.options.log.warn({ err: toError(error), share }, "could not renew a share");
    }
  }

  /** Stops acting on the share first (the fence refuses from now on), then hands it over. */
  async release(share: number, lease: Lease, now: number): Promise<void> {
    this.options.held.lose(share, "assigned to another member");
    await this.releaseLease(share, lease, now);
  }

  /** Hands the share's Lease over (nobody holds it, so others take it at their next round). */
  async releaseLease(share: number, lease: Lease, now: number): Promise<void> {
    try {
      await this.options.client.replace({
        ...lease,
        spec: specFromRecord(releasedRecord(recordFromSpec(lease.spec), now)),
      });
    } catch (error) {
      this.options.log.warn({ err: toError(error), share }, "could not release a share; it will expire");
    }
  }

  /**
   * Frees the expired share of a member gone (as a release would), at the version listed: as safe as taking
   * it, and 409 if its holder or another replica wrote it meanwhile.
   */
  async free(share: number, lease: Lease, now: number): Promise<void> {
    const record = recordFromSpec(lease.spec);
    try {
      await this.options.client.replace({ ...lease, spec: specFromRecord(releasedRecord(record, now)) });
      this.options.log.info({ share, from: record.holderIdentity }, "freed the expired share of a member gone");
    } catch (error) {
      if (!isConflict(error)) this.options.log.warn({ err: toError(error), share }, "could not free an expired share");
    }
  }

  /** Deletes a Lease nobody needs any more: an expired member's, or a share's of another count. */
  async forget(lease: Lease): Promise<void> {
    const name = lease.metadata?.name ?? "";
    try {
      await this.options.client.delete(this.options.namespace, name, lease.metadata?.resourceVersion);
      const role = lease.metadata?.labels?.[SHARD_LABELS.role];
      this.options.log.info(
        { lease: name, holder: recordFromSpec(lease.spec).holderIdentity },
        role === "member" ? "deleted an expired member" : "deleted a share Lease of another count",
      );
    } catch (error) {
      this.options.log.debug({ err: toError(error), lease: name }, "could not delete an expired member");
    }
  }

  private labels(role: LeaseRole): Record<string, string> {
    return shardLabels(this.options.name, role, this.options.shares);
  }

  private leaseObject(leaseName: string, role: LeaseRole, spec: Lease["spec"]): Lease {
    return shardLease(this.options.namespace, this.options.name, this.options.shares, leaseName, role, spec);
  }
}

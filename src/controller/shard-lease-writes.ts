/**
 * A sharded replica's writes to its shard group's Leases (ADR 0016, ADR 0024): those of every member (its
 * membership, the epoch it moves: MemberWrites, src/controller/member-writes.ts) and the shares it takes,
 * renews, releases or frees, the Leases it deletes. Each replaces a Lease at the resourceVersion just listed, so
 * of two replicas racing for one exactly one wins. Which to write is the ShardElector's round
 * (src/controller/shard-election.ts); a share taken or renewed is noted in its HeldShares.
 */
import type { Clock } from "../time/clock.js";
import { isConflict, toError } from "../kube/errors.js";
import type { HeldShares } from "./held-shares.js";
import { acquiredRecord, recordFromSpec, releasedRecord, specFromRecord, type Lease } from "./lease.js";
import { MemberWrites, type MemberWritesOptions } from "./member-writes.js";
import { SHARD_LABELS, shareLeaseName, termOf } from "./shard-leases.js";

export interface ShardLeaseWritesOptions extends MemberWritesOptions {
  /** Written into the Leases for people to read. */
  clock: Clock;
  /** The shares this replica holds: a share taken or renewed is noted there. */
  held: HeldShares;
}

/** The writes of one sharded replica to the Leases of its group: a member's, and its shares'. */
export class ShardLeaseWrites extends MemberWrites {
  constructor(protected override readonly options: ShardLeaseWritesOptions) {
    super(options);
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
}

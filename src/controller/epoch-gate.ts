import type { Logger } from "pino";
import { systemClock, type Clock } from "../time/clock.js";
import { toError } from "../kube/errors.js";
import { decideEpoch, epochLeaseName, parseCount, type MemberSeen, type ShareSeen } from "./epoch.js";
import type { LeadGate, ShardLeaseClient } from "./leader-election.js";
import { hasExpired, observeLease, type Lease, type LeaseObservation } from "./lease.js";
import { MemberWrites } from "./member-writes.js";
import { monotonicNow } from "./monotonic.js";
import { EPOCH_LOG, SHARD_LABELS, memberLeaseName } from "./shard-leases.js";

export interface EpochGateOptions {
  namespace: string;
  /** The group: the leader Lease's name, which sharded replicas of the same group list their Leases under. */
  name: string;
  identity: string;
  client: ShardLeaseClient;
  log: Logger;
  clock?: Clock;
  /** The member Lease's duration (default 15 s), and its age at which it is written again (default 6 s). */
  leaseDurationMs?: number;
  renewAfterMs?: number;
}

/**
 * The sharding epoch (ADR 0024) for an unsharded leader: the 1-share case. Its Lease `<group>` is the one share
 * of count 1, and it leads only while the epoch in force is 1 and no share Lease of another count is held.
 * `mayLead("acquire")`, asked before it takes the Lease, records the epoch at 1 when nothing of another count is
 * live or held; `mayLead("confirm")`, asked after it took the Lease (a list made after that write), requires the
 * epoch at 1. A replica of another count that moved the epoch meanwhile sees the leader Lease held, and waits.
 * Once held, the leader Lease itself keeps the epoch at 1: nobody moves it while it is held.
 *
 * While it stands by, it is a member of count 1 (`<group>-member-<hash>`, as sharded replicas are): replicas of
 * another count do not move the epoch away from 1 while it lives, so a rolling update hands the apps to a
 * standby of the old count before the new count takes over. The leader elector asks `mayLead` only when the
 * leader Lease could be taken, and `standBy` otherwise, which writes the member Lease once per `renewAfterMs`
 * and reads nothing else. Leading, it does not renew it (the leader Lease blocks the epoch by itself); `leave`
 * deletes it on a graceful stop. It writes the member and epoch Leases as a sharded replica does (MemberWrites,
 * with a count of 1), so they read the same whichever count wrote them.
 */
export class EpochGate implements LeadGate {
  private readonly clock: Clock;
  private readonly elapsed: () => number;
  private readonly log: Logger;
  private observed = new Map<string, LeaseObservation>();
  private waitingFor: string | undefined;
  private readonly memberName: string;
  private readonly writes: MemberWrites;
  /** The member Lease as last read or written by this process (undefined after a failed write: read it again). */
  private member: Lease | undefined;

  constructor(private readonly options: EpochGateOptions) {
    this.clock = options.clock ?? systemClock;
    this.elapsed = monotonicNow(this.clock);
    this.log = options.log.child({ shardGroup: options.name, identity: options.identity });
    this.memberName = memberLeaseName(options.name, options.identity);
    this.writes = new MemberWrites({
      namespace: options.namespace,
      name: options.name,
      shares: 1,
      identity: options.identity,
      leaseDurationMs: options.leaseDurationMs ?? 15_000,
      renewAfterMs: options.renewAfterMs ?? 6_000,
      client: options.client,
      elapsed: this.elapsed,
      log: this.log,
      memberName: this.memberName,
    });
  }

  /** Whether this replica may take the leader Lease ("acquire") or lead under it ("confirm"). Never throws. */
  async mayLead(phase: "acquire" | "confirm"): Promise<boolean> {
    const { namespace, name, client } = this.options;
    let leases: Lease[];
    try {
      leases = await client.list(namespace, `${SHARD_LABELS.group}=${name}`);
    } catch (error) {
      this.log.warn({ err: toError(error) }, "could not list the shard Leases");
      return false;
    }
    const readAt = this.elapsed();
    const listed = leases.find((l) => l.metadata?.name === this.memberName);
    this.member = await this.writes.renewMembership(listed, this.clock.now(), readAt);
    this.observed = new Map(
      leases.map((lease) => {
        const leaseName = lease.metadata?.name ?? "";
        return [leaseName, observeLease(this.observed.get(leaseName), lease, readAt)];
      }),
    );
    const members: MemberSeen[] = [];
    const held: ShareSeen[] = [];
    for (const lease of leases) {
      const leaseName = lease.metadata?.name ?? "";
      const seen = this.observed.get(leaseName);
      const holder = seen?.record.holderIdentity;
      if (seen === undefined || holder === undefined || hasExpired(seen, readAt)) continue;
      const role = lease.metadata?.labels?.[SHARD_LABELS.role];
      const count = parseCount(lease.metadata?.labels?.[SHARD_LABELS.count]);
      if (role === "member") members.push({ identity: holder, count });
      else if (role === "share") held.push({ name: leaseName, holder, count });
    }
    const epochLease = leases.find((l) => l.metadata?.name === epochLeaseName(name));
    const decision = decideEpoch(1, {
      inForce: parseCount(epochLease?.metadata?.labels?.[SHARD_LABELS.count]),
      members,
      held,
    });
    if (decision.mayAct) {
      this.waitingFor = undefined;
      return true;
    }
    if (phase === "acquire" && decision.mayMove && (await this.writes.moveEpoch(epochLease, this.clock.now()))) {
      this.waitingFor = undefined;
      return true;
    }
    const waitingFor = decision.blockers.join("; ");
    if (waitingFor !== this.waitingFor) {
      this.waitingFor = waitingFor;
      this.log.info({ shares: 1, waitingFor, mayMove: decision.mayMove }, EPOCH_LOG.waiting);
    }
    return false;
  }

  /**
   * Keeps the member Lease alive while the leader Lease is held by another replica: a write when it is due (the
   * Lease as last written, so nothing is read first; after a conflict, read again). Never throws.
   */
  async standBy(): Promise<void> {
    if (!this.writes.membershipDue(this.elapsed())) return;
    try {
      this.member ??= await this.options.client.get(this.options.namespace, this.memberName);
    } catch (error) {
      this.log.warn({ err: toError(error) }, "could not read the member Lease");
      return;
    }
    this.member = await this.writes.renewMembership(this.member, this.clock.now(), this.elapsed());
  }

  /** Deletes this replica's member Lease (a graceful stop). Never throws. */
  async leave(): Promise<void> {
    try {
      await this.writes.leave(await this.options.client.get(this.options.namespace, this.memberName));
    } catch (error) {
      this.log.warn({ err: toError(error) }, "could not delete the member Lease; it will expire");
    }
  }

  /** What keeps this replica from leading, as of the last check (undefined when nothing did). */
  blockedBy(): string | undefined {
    return this.waitingFor;
  }
}

/**
 * The sharding epoch (ADR 0024): the share count in force for a group, kept in one Lease (`<group>-epoch`).
 * A replica acts on apps only under a share Lease of the count in force; a replica configured with another
 * count stays a member but does not act until the epoch moves to its count, and the epoch moves only once no
 * live member runs another count and no share Lease of another count is held. So two replicas whose share
 * counts differ (an upgrade from 32 to 64 shares, or from one leader to 32 shares) never act on the same app
 * at once: the old holders release, or their Leases expire, before the new ones act.
 *
 * This file is the pure part: no I/O, no clock. Liveness and expiry are decided by the caller, by its own
 * observation (`hasExpired`), never by another node's clock.
 */

/** A member Lease seen live (not expired by this replica's observation), with the count its replica runs. */
export interface MemberSeen {
  identity: string;
  /** The member's share count; undefined for a member of a release that did not write it (count unknown). */
  count: number | undefined;
}

/** A share Lease seen held (a holder, not expired by this replica's observation). */
export interface ShareSeen {
  /** The Lease's name, for the log. */
  name: string;
  holder: string;
  /**
   * The count the share belongs to: the `canaryapp.io/shard-count` label; 1 for the leader Lease of an
   * unsharded replica (`<group>`); undefined for a share Lease of a release that did not label it.
   */
  count: number | undefined;
}

/** What a replica has seen of its group in one round. */
export interface EpochView {
  /** The count in force (the epoch Lease's), or undefined when no epoch has been recorded yet. */
  inForce: number | undefined;
  /** The live members, this replica included or not (its own count is never a blocker). */
  members: readonly MemberSeen[];
  /** The share Leases held (and the unsharded leader Lease, if held). */
  held: readonly ShareSeen[];
}

/** Whether a replica configured with `count` shares may act, and whether it may move the epoch to its count. */
export interface EpochDecision {
  /** The epoch is `count` and no share Lease of another count is held: it may take and use shares. */
  mayAct: boolean;
  /** The epoch is not `count`, and nothing of another count is live or held: it may record `count` as in force. */
  mayMove: boolean;
  /** What stands in the way (empty when it may act): for the log and readiness detail. */
  blockers: string[];
}

/** The name of an epoch Lease. */
export function epochLeaseName(group: string): string {
  return `${group}-epoch`;
}

/** The count label's value parsed: a positive integer, or undefined when missing or malformed. */
export function parseCount(value: string | undefined): number | undefined {
  if (value === undefined || !/^[1-9][0-9]*$/.test(value)) return undefined;
  return Number(value);
}

function describeCount(count: number | undefined): string {
  return count === undefined ? "an unknown count" : `${count} share${count === 1 ? "" : "s"}`;
}

/**
 * The epoch rule for a replica configured with `count` shares, from one round's view.
 *
 * - It may act only while the epoch in force is its count and it sees no share Lease of another count held
 *   (such a holder has not yet seen the epoch move, or is of a release that knows no epoch: it may act).
 * - It may move the epoch to its count only when the epoch is another (or none), no live member runs another
 *   count (so a rolling update moves it once the old replicas are gone, and two counts running side by side
 *   leave the epoch where it is instead of taking it from each other), and no share Lease of another count is
 *   held (the old holders have released, or their Leases expired by this replica's clock).
 */
export function decideEpoch(count: number, view: EpochView): EpochDecision {
  const heldElsewhere = view.held
    .filter((share) => share.count !== count)
    .map((share) => `share Lease ${share.name} (${describeCount(share.count)}) held by ${share.holder}`);
  if (view.inForce === count) {
    return { mayAct: heldElsewhere.length === 0, mayMove: false, blockers: heldElsewhere };
  }
  const membersElsewhere = view.members
    .filter((member) => member.count !== count)
    .map((member) => `member ${member.identity} runs ${describeCount(member.count)}`);
  const blockers = [
    `the epoch in force is ${view.inForce === undefined ? "not recorded" : describeCount(view.inForce)}`,
    ...membersElsewhere,
    ...heldElsewhere,
  ];
  return { mayAct: false, mayMove: membersElsewhere.length === 0 && heldElsewhere.length === 0, blockers };
}

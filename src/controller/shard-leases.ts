/**
 * The Leases of a shard group (ADR 0016, ADR 0024): their names and labels, the term a Lease record stands for,
 * and what one list of them says of the group. No I/O: the ShardElector (src/controller/shard-election.ts)
 * reads and writes them.
 */
import { createHash } from "node:crypto";
import {
  decideEpoch,
  epochLeaseName,
  parseCount,
  type EpochDecision,
  type MemberSeen,
  type ShareSeen,
} from "./epoch.js";
import { hasExpired, unchangedFor, type Lease, type LeaseObservation, type LeaseRecord } from "./lease.js";

/** Labels every Lease of a shard group carries, so that one list call reads them all. */
export const SHARD_LABELS = {
  /** The group: the lease name the replicas share (`--lease-name`). */
  group: "canaryapp.io/shard-group",
  /** "member" (one per live replica), "share" (one per share of the apps) or "epoch" (one per group). */
  role: "canaryapp.io/lease-role",
  /**
   * The share count (ADR 0024): on a member, the count its replica runs; on a share, the count it is a share
   * of; on the epoch, the count in force.
   */
  count: "canaryapp.io/shard-count",
} as const;

/** A Lease name of at most 63 characters, unique per identity (identities need not be valid names). */
export function memberLeaseName(group: string, identity: string): string {
  return `${group}-member-${createHash("sha256").update(identity).digest("hex").slice(0, 12)}`;
}

/**
 * The name of share `share`'s Lease under a count of `shares` (ADR 0024): shares of different counts are
 * different Leases, so nobody takes share 5 of 64 by holding share 5 of 32. The share stays the last part.
 */
export function shareLeaseName(group: string, share: number, shares: number): string {
  return `${group}-${shares}-share-${share}`;
}

/** The term of a Lease record: which acquisition it is (a new holder, or the same one again, is a new term). */
export function termOf(record: LeaseRecord): string {
  return `${record.leaseTransitions ?? 0}@${record.acquireTimeMs ?? 0}`;
}

/** What the log says about the sharding epoch (ADR 0024). */
export const EPOCH_LOG = {
  waiting: "not acting: the sharding epoch is not this replica's share count",
  moved: "moved the sharding epoch to this replica's share count",
  acting: "acting under the sharding epoch",
} as const;

/** What a Lease of the group is for: one per live replica, one per share, one epoch per group. */
export type LeaseRole = "member" | "share" | "epoch";

/** The labels of a Lease of `group` with `role`, written by a replica running `shares` shares. */
export function shardLabels(group: string, role: LeaseRole, shares: number): Record<string, string> {
  return {
    [SHARD_LABELS.group]: group,
    [SHARD_LABELS.role]: role,
    [SHARD_LABELS.count]: String(shares),
  };
}

/** A new Lease of the group, as a replica running `shares` shares creates it. */
export function shardLease(
  namespace: string,
  group: string,
  shares: number,
  leaseName: string,
  role: LeaseRole,
  spec: Lease["spec"],
): Lease {
  return {
    apiVersion: "coordination.k8s.io/v1",
    kind: "Lease",
    metadata: { namespace, name: leaseName, labels: shardLabels(group, role, shares) },
    ...(spec !== undefined ? { spec } : {}),
  };
}

/** Who reads a list of the group's Leases: a replica of the group, and its settings. */
export interface GroupReader {
  /** The replica's identity. */
  identity: string;
  /** The group's name. */
  name: string;
  /** The replica's share count. */
  shares: number;
  /** See ShardElectionOptions.forgetMemberAfterMs. */
  forgetMemberAfterMs: number;
}

/** What one list of the group's Leases says (see {@link surveyGroup}). */
export interface GroupSurvey {
  /** The live members of the reader's count, the reader included, sorted. */
  members: string[];
  /** The expired member Leases to delete. */
  forget: Lease[];
  /** The group's epoch Lease, if there is one. */
  epochLease: Lease | undefined;
  decision: EpochDecision;
}

/**
 * What a list says of the group (ADR 0024): the live members (this replica included), the expired member
 * Leases to delete, and whether this replica may act under the epoch, or move it. The members are those of
 * this replica's count: the others take no share of it.
 */
export function surveyGroup(
  byName: Map<string, Lease>,
  observed: ReadonlyMap<string, LeaseObservation>,
  readAt: number,
  reader: GroupReader,
): GroupSurvey {
  const { identity, name, shares, forgetMemberAfterMs } = reader;
  const members = new Set([identity]);
  const membersSeen: MemberSeen[] = [];
  const heldSeen: ShareSeen[] = [];
  const forget: Lease[] = [];
  for (const [leaseName, lease] of byName) {
    const labels = lease.metadata?.labels;
    const role = labels?.[SHARD_LABELS.role];
    const seen = observed.get(leaseName);
    const holder = seen?.record.holderIdentity;
    if (seen === undefined || holder === undefined) continue;
    // The unsharded leader's Lease is the one share of count 1.
    const count = leaseName === name ? 1 : parseCount(labels?.[SHARD_LABELS.count]);
    if (role === "member") {
      if (!hasExpired(seen, readAt)) {
        // The shares are divided among the members of this replica's count only.
        if (count === shares) members.add(holder);
        if (holder !== identity) membersSeen.push({ identity: holder, count });
      } else if (holder !== identity && unchangedFor(seen, readAt) > forgetMemberAfterMs) {
        forget.push(lease);
      }
    } else if ((role === "share" || leaseName === name) && !hasExpired(seen, readAt)) {
      heldSeen.push({ name: leaseName, holder, count });
    }
  }
  const epochLease = byName.get(epochLeaseName(name));
  const decision = decideEpoch(shares, {
    inForce: parseCount(epochLease?.metadata?.labels?.[SHARD_LABELS.count]),
    members: membersSeen,
    held: heldSeen,
  });
  return { members: [...members].sort(), forget, epochLease, decision };
}

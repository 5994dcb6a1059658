/**
 * Who holds each share of a sharded group, read from its Leases as the replicas write them (ADR 0016, 0024):
 * named by shareLeaseName and labelled with the group and the role `share`; of a group of one share, the leader
 * Lease `<group>`. The tests and benches that kill and add replicas time the hand-overs by it.
 */
import type { CoordinationV1Api } from "@kubernetes/client-node";
import { isLeaseExpired, recordFromSpec } from "../../src/controller/lease.js";
import { DEFAULT_LEASE_NAME } from "../../src/config.js";
import { SHARD_LABELS, shareLeaseName } from "../../src/controller/shard-leases.js";

/** The holder of every share of `shares` whose Lease has one and has not expired, by share; undefined elsewhere. */
export async function shareHolders(
  coordination: CoordinationV1Api,
  namespace: string,
  shares: number,
  group = DEFAULT_LEASE_NAME,
): Promise<(string | undefined)[]> {
  const holders = new Array<string | undefined>(shares).fill(undefined);
  const now = Date.now();
  if (shares === 1) {
    const lease = await coordination.readNamespacedLease({ namespace, name: group });
    const record = recordFromSpec(lease.spec);
    if (!isLeaseExpired(record, now)) holders[0] = record.holderIdentity;
    return holders;
  }
  const leases = await coordination.listNamespacedLease({
    namespace,
    labelSelector: `${SHARD_LABELS.group}=${group},${SHARD_LABELS.role}=share`,
  });
  const shareByName = new Map(holders.map((_, share) => [shareLeaseName(group, share, shares), share]));
  for (const lease of leases.items) {
    const share = shareByName.get(lease.metadata?.name ?? "");
    const record = recordFromSpec(lease.spec);
    if (share !== undefined && !isLeaseExpired(record, now)) holders[share] = record.holderIdentity;
  }
  return holders;
}

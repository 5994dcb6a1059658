import { createHash } from "node:crypto";
import type { Logger } from "pino";
import { sleep, systemClock, type Clock } from "../time/clock.js";
import { isConflict, toError } from "../kube/errors.js";
import { decideEpoch, epochLeaseName, parseCount, type MemberSeen, type ShareSeen } from "./epoch.js";
import type { ShardLeaseClient } from "./leader-election.js";
import {
  acquiredRecord,
  canAcquire,
  hasExpired,
  observeLease,
  recordFromSpec,
  releasedRecord,
  specFromRecord,
  unchangedFor,
  type Lease,
  type LeaseObservation,
  type LeaseRecord,
} from "./lease.js";
import { monotonicNow } from "./monotonic.js";
import { assignShares } from "./shards.js";

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

export interface ShardElectionOptions {
  namespace: string;
  /**
   * The group's name: share Leases are `<name>-<shares>-share-<n>`, membership Leases `<name>-member-<hash>`,
   * the epoch `<name>-epoch`; an unsharded leader holds `<name>` itself (the one share of count 1).
   */
  name: string;
  /** How many shares the apps are divided into (`--shards`). */
  shares: number;
  /** This replica's name, written as the holder of its Leases. */
  identity: string;
  /**
   * How long a Lease is valid after its last renewal. Default 15 s. Others count it from when they saw the
   * renewal, by their own clocks (`hasExpired`).
   */
  leaseDurationMs?: number;
  /**
   * How long a share counts as held after its last successful renewal was sent: past it the fence refuses
   * writes, even though others wait until leaseDuration after they saw the renewal. The gap is the margin for a
   * write already sent and for clocks that run at slightly different paces. Default 10 s.
   */
  renewDeadlineMs?: number;
  /** Time between two rounds. Default 2 s. */
  retryPeriodMs?: number;
  /**
   * A held Lease is written again once its last renewal is this old. Default 6 s: with rounds 2 s apart, a
   * renewal gets two tries (at 6 and 8 s) before the fence closes at renewDeadline (10 s).
   */
  renewAfterMs?: number;
  /**
   * A membership Lease that has not changed for this long (by this replica's clock; not less than the lease
   * duration: it must have expired) is deleted. Default: the lease duration, so as soon as it expires. A replica
   * that starts cannot tell a Lease that is no longer renewed from one that is, before it has watched it for a
   * lease duration; one that is gone it does not count. A replica whose Lease was deleted while it was alive
   * only creates it again at its next round.
   */
  forgetMemberAfterMs?: number;
  client: ShardLeaseClient;
  log: Logger;
  clock?: Clock;
  /** This replica now holds `share` (a new term); enqueue its apps. */
  onGained?: (share: number) => void;
  /** This replica no longer holds `share`; the fence already refuses its writes. Drop its apps' work. */
  onLost?: (share: number) => void;
  /**
   * The fence of `share` had closed (a renewal ran past renewDeadline) and a renewal has now landed under the
   * same term: the share is usable again. Queue the work remembered while it was closed.
   */
  onResumed?: (share: number) => void;
}

/** A share this replica holds: the term (which acquisition) and when it was last renewed (monotonic clock). */
interface Held {
  term: string;
  /** When the last successful write of the share's Lease was sent. */
  renewedAt: number;
  /** A round has logged its fence closed by a late renewal (said once; the fence itself is `term`'s, by the clock). */
  closed?: boolean;
  /**
   * A round that listed the Leases after the share was taken found it still held under `term` and the epoch
   * in force this replica's count (ADR 0024): until then the share is not used.
   */
  confirmed: boolean;
}

/** What the log says when a share's fence closes and opens again without the share changing hands. */
export const SHARE_LOG = {
  closed: "a share's renewal is late; its fence is closed",
  reopened: "renewed a share after the renew deadline; its fence is open again",
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

/** What the log says about the sharding epoch (ADR 0024). */
export const EPOCH_LOG = {
  waiting: "not acting: the sharding epoch is not this replica's share count",
  moved: "moved the sharding epoch to this replica's share count",
  acting: "acting under the sharding epoch",
} as const;

/** The term of a Lease record: which acquisition it is (a new holder, or the same one again, is a new term). */
function termOf(record: LeaseRecord): string {
  return `${record.leaseTransitions ?? 0}@${record.acquireTimeMs ?? 0}`;
}

/**
 * Sharding by Leases (ADR 0016). Each replica holds a membership Lease, renewed; every round (each
 * retryPeriod) it lists the group's Leases, takes the live members (membership not expired), computes the
 * same assignment as every other replica (`assignShares`: rendezvous hashing, loads within one share), and
 * then takes the free or expired shares assigned to it, renews those it holds, and releases those no longer
 * assigned to it. A replica that dies stops renewing: its Leases expire and the others take its shares.
 * Expiry is judged by what each replica has seen (`hasExpired`): a Lease that has not changed for its
 * duration since this replica first listed it so, by this replica's own clock, never by the holder's renewTime.
 *
 * Every write replaces a Lease at the resourceVersion just listed, so of two replicas racing for a share
 * exactly one wins. `term(share)` is the fence: defined only while this replica holds the share and renewed
 * it within renewDeadline.
 */
export class ShardElector {
  readonly identity: string;
  private readonly leaseDurationMs: number;
  private readonly renewDeadlineMs: number;
  private readonly retryPeriodMs: number;
  private readonly renewAfterMs: number;
  private readonly forgetMemberAfterMs: number;
  private readonly clock: Clock;
  /** Times every duration: expiry, the fence, when a renewal is due. */
  private readonly elapsed: () => number;
  private readonly log: Logger;
  private readonly memberName: string;
  private readonly selector: string;
  private readonly held = new Map<number, Held>();
  /** The group's Leases as last listed, each with when it was first listed so (by name). */
  private observed = new Map<string, LeaseObservation>();
  /** When the membership Lease was last written by this process (monotonic), if it was. */
  private memberRenewedAt: number | undefined;
  private rounds = 0;
  private members: string[] = [];
  /** Whether the last round found the epoch in force this replica's count and nothing of another count held. */
  private acting = false;
  /** What kept the last round from acting, as logged (said again only when it changes). */
  private waitingFor: string | undefined;
  private stopping: AbortController | undefined;
  private running: Promise<void> | undefined;

  constructor(private readonly options: ShardElectionOptions) {
    this.identity = options.identity;
    this.leaseDurationMs = options.leaseDurationMs ?? 15_000;
    this.renewDeadlineMs = options.renewDeadlineMs ?? 10_000;
    this.retryPeriodMs = options.retryPeriodMs ?? 2_000;
    this.renewAfterMs = options.renewAfterMs ?? 6_000;
    this.forgetMemberAfterMs = options.forgetMemberAfterMs ?? this.leaseDurationMs;
    this.clock = options.clock ?? systemClock;
    this.elapsed = monotonicNow(this.clock);
    this.log = options.log.child({ shardGroup: options.name, identity: options.identity });
    this.memberName = memberLeaseName(options.name, options.identity);
    this.selector = `${SHARD_LABELS.group}=${options.name}`;
    if (!Number.isInteger(options.shares) || options.shares < 1) {
      throw new Error(`shard election: shares must be a positive integer, got ${options.shares}`);
    }
    if (this.identity === "") throw new Error("shard election: identity must not be empty");
    // As for leader election: a share must be given up (here: fenced) before anyone else may take it, and a
    // renewal must get more than one try before the deadline.
    if (this.leaseDurationMs <= this.renewDeadlineMs) {
      throw new Error(`shard election: leaseDuration (${this.leaseDurationMs} ms) must exceed renewDeadline`);
    }
    if (this.renewDeadlineMs <= this.renewAfterMs + this.retryPeriodMs) {
      throw new Error(
        `shard election: renewDeadline (${this.renewDeadlineMs} ms) must exceed renewAfter + retryPeriod`,
      );
    }
  }

  /**
   * The term under which this replica holds `share`, or undefined when it does not hold it, or has not
   * renewed it within renewDeadline (another replica may take it once the lease duration has passed).
   */
  term(share: number): string | undefined {
    const held = this.held.get(share);
    if (held === undefined || !held.confirmed || !this.acting) return undefined;
    if (this.elapsed() - held.renewedAt >= this.renewDeadlineMs) return undefined;
    return held.term;
  }

  /** The shares this replica holds now, in order. */
  heldShares(): number[] {
    return [...this.held.keys()].filter((s) => this.term(s) !== undefined).sort((a, b) => a - b);
  }

  /**
   * Whether this replica acts under the sharding epoch (ADR 0024), and if not, what it waits for (as of the
   * last round).
   */
  epoch(): { acting: boolean; waitingFor: string | undefined } {
    return { acting: this.acting, waitingFor: this.acting ? undefined : this.waitingFor };
  }

  /** The live members seen by the last round (this replica included). */
  liveMembers(): readonly string[] {
    return this.members;
  }

  /** Starts the rounds. Idempotent. */
  start(): void {
    if (this.running !== undefined) return;
    const stopping = new AbortController();
    this.stopping = stopping;
    this.running = (async () => {
      while (!stopping.signal.aborted) {
        await this.round();
        await sleep(this.clock, this.retryPeriodMs, stopping.signal);
      }
    })();
  }

  /**
   * Stops the rounds, gives up every share (lost, then released so others take them at their next round)
   * and deletes the membership Lease. Call it after the work on the shares has drained.
   */
  async stop(): Promise<void> {
    this.stopping?.abort();
    await this.running;
    const shares = [...this.held.keys()];
    for (const share of shares) this.lose(share, "shutting down");
    try {
      const leases = await this.options.client.list(this.options.namespace, this.selector);
      await Promise.all(
        leases.map(async (lease) => {
          const record = recordFromSpec(lease.spec);
          if (record.holderIdentity !== this.identity) return;
          const name = lease.metadata?.name ?? "";
          if (name === this.memberName) {
            await this.options.client.delete(this.options.namespace, name, lease.metadata?.resourceVersion);
          } else {
            await this.options.client.replace({
              ...lease,
              spec: specFromRecord(releasedRecord(record, this.clock.now())),
            });
          }
        }),
      );
      this.log.info({ released: shares.length }, "released the shares and left the group");
    } catch (error) {
      this.log.warn({ err: toError(error) }, "could not release every share; they will expire");
    }
  }

  /** The group's Leases (and the unsharded leader's Lease, which carries no label), by name. */
  private async listGroup(): Promise<Map<string, Lease>> {
    const { namespace, client, name } = this.options;
    const leases = await client.list(namespace, this.selector);
    const leader = await client.get(namespace, name);
    if (leader !== undefined && !leases.some((l) => l.metadata?.name === name)) leases.push(leader);
    return new Map(leases.map((l) => [l.metadata?.name ?? "", l]));
  }

  /** Notes a list read at `readAt` (monotonic, taken once it returned): every record in it was written before. */
  private observeAll(byName: Map<string, Lease>, readAt: number): void {
    this.observed = new Map(
      [...byName].map(([leaseName, lease]) => [leaseName, observeLease(this.observed.get(leaseName), lease, readAt)]),
    );
  }

  /**
   * What a list says of the group (ADR 0024): the live members (this replica included), the expired member
   * Leases to delete, and whether this replica may act under the epoch, or move it. The members are those of
   * this replica's count: the others take no share of it.
   */
  private survey(byName: Map<string, Lease>, readAt: number) {
    const { name, shares } = this.options;
    const members = new Set([this.identity]);
    const membersSeen: MemberSeen[] = [];
    const heldSeen: ShareSeen[] = [];
    const forget: Lease[] = [];
    for (const [leaseName, lease] of byName) {
      const labels = lease.metadata?.labels;
      const role = labels?.[SHARD_LABELS.role];
      const seen = this.observed.get(leaseName);
      const holder = seen?.record.holderIdentity;
      if (seen === undefined || holder === undefined) continue;
      // The unsharded leader's Lease is the one share of count 1.
      const count = leaseName === name ? 1 : parseCount(labels?.[SHARD_LABELS.count]);
      if (role === "member") {
        if (!hasExpired(seen, readAt)) {
          // The shares are divided among the members of this replica's count only.
          if (count === shares) members.add(holder);
          if (holder !== this.identity) membersSeen.push({ identity: holder, count });
        } else if (holder !== this.identity && unchangedFor(seen, readAt) > this.forgetMemberAfterMs) {
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

  /**
   * Opens the fence of the shares taken since the last list: a list made after they were written shows each
   * still held under its term, the epoch in force this replica's count, and no share of another count held
   * (ADR 0024). A replica of another count that took a share before it saw the epoch move finds the epoch
   * moved in its own confirming list, and never uses it.
   */
  private confirmFrom(byName: Map<string, Lease>, mayAct: boolean): void {
    const { name, shares } = this.options;
    if (!mayAct) return;
    for (const [share, held] of this.held) {
      if (held.confirmed) continue;
      const record = recordFromSpec(byName.get(shareLeaseName(name, share, shares))?.spec);
      if (record.holderIdentity === this.identity && termOf(record) === held.term) this.confirm(share, held);
    }
  }

  /** One round: list, renew membership, work out the assignment, take, renew and release shares. */
  async round(): Promise<void> {
    const { name, shares } = this.options;
    this.rounds++;
    // A share whose fence closed (renewal overdue) is given up before anything else, even if its Lease still
    // names this replica: work dropped while it was closed is queued again when it is taken anew (a new term).
    this.expireStale();
    // Written into the Leases for people to read; no replica compares it with its own clock.
    const now = this.clock.now();
    let byName: Map<string, Lease>;
    try {
      byName = await this.listGroup();
    } catch (error) {
      this.log.warn({ err: toError(error) }, "could not list the shard Leases");
      this.expireStale();
      return;
    }
    const readAt = this.elapsed();
    this.observeAll(byName, readAt);

    await this.renewMembership(byName.get(this.memberName), now, readAt);
    const { members, forget, epochLease, decision } = this.survey(byName, readAt);
    this.members = members;
    const writes: Promise<unknown>[] = forget.map((lease) => this.forget(lease));
    let moved = false;
    if (!decision.mayAct) {
      // Another count is in force, or something of another count may still act: this replica's shares are
      // given up (fenced first, then released) and none is taken. It stays a member, so others see its count.
      this.acting = false;
      for (const [share] of this.held) {
        const lease = byName.get(shareLeaseName(name, share, shares));
        this.lose(share, "the sharding epoch is not this replica's count");
        if (lease !== undefined && recordFromSpec(lease.spec).holderIdentity === this.identity) {
          writes.push(this.releaseLease(share, lease, now));
        }
      }
      const waitingFor = decision.blockers.join("; ");
      if (waitingFor !== this.waitingFor) {
        this.waitingFor = waitingFor;
        this.log.info({ shares, waitingFor, mayMove: decision.mayMove }, EPOCH_LOG.waiting);
      }
      if (decision.mayMove) moved = await this.moveEpoch(epochLease, now);
      if (!moved) {
        await Promise.all(writes);
        this.expireStale();
        return;
      }
    }
    if (!this.acting) {
      this.acting = true;
      this.waitingFor = undefined;
      this.log.info({ shares }, EPOCH_LOG.acting);
    }
    // Shares taken in an earlier round whose confirming list failed: this list confirms them.
    this.confirmFrom(byName, !moved);
    // Share Leases of another count, or of a release without counts, that nobody holds any more: clutter.
    for (const [leaseName, lease] of byName) {
      const labels = lease.metadata?.labels;
      if (labels?.[SHARD_LABELS.role] !== "share" || parseCount(labels[SHARD_LABELS.count]) === shares) continue;
      const seen = this.observed.get(leaseName);
      if (seen === undefined) continue;
      const gone = seen.record.holderIdentity === undefined || hasExpired(seen, readAt);
      if (gone && unchangedFor(seen, readAt) > this.forgetMemberAfterMs) writes.push(this.forget(lease));
    }
    const memberSet = new Set(members);
    // A replica that has just joined takes no share in its first round: it has not been seen by the others
    // yet, and they would only have to take the shares back.
    const mine = new Set(this.rounds > 1 ? (assignShares(this.members, shares).get(this.identity) ?? []) : []);

    for (let share = 0; share < shares; share++) {
      const leaseName = shareLeaseName(name, share, shares);
      const lease = byName.get(leaseName);
      const seen = this.observed.get(leaseName);
      const record = recordFromSpec(lease?.spec);
      const ours = record.holderIdentity === this.identity;
      const held = this.held.get(share);
      if (held !== undefined && !ours) {
        this.lose(share, `now held by ${record.holderIdentity ?? "nobody"}`);
      }
      if (mine.has(share)) {
        if (lease === undefined) writes.push(this.take(share, undefined, now));
        else if (!ours && seen !== undefined && canAcquire(seen, this.identity, readAt)) {
          writes.push(this.take(share, lease, now));
        } else if (ours && held === undefined) writes.push(this.take(share, lease, now));
        else if (ours && held !== undefined && readAt - held.renewedAt >= this.renewAfterMs) {
          writes.push(this.renew(share, lease));
        } else if (ours && held !== undefined && termOf(record) !== held.term) {
          // The Lease rewritten by a process of the same identity (a restart): not this process's term.
          this.lose(share, "renewed under another term");
        }
      } else if (ours && lease !== undefined) {
        writes.push(this.release(share, lease, now));
      } else if (
        lease !== undefined &&
        seen !== undefined &&
        record.holderIdentity !== undefined &&
        !memberSet.has(record.holderIdentity) &&
        hasExpired(seen, readAt)
      ) {
        // Assigned to another member, who may not be able to tell yet that it expired (it started less than a
        // lease duration ago): freed, it is taken at that member's next round.
        writes.push(this.free(share, lease, now));
      }
    }
    await Promise.all(writes);
    // Shares taken this round are confirmed by a list made now, after their writes (ADR 0024), rather than a
    // round later: a share changing hands is unused for one list, not for a round.
    if ([...this.held.values()].some((held) => !held.confirmed)) await this.confirmRound();
    this.expireStale();
  }

  /** A list made to confirm the shares just taken (`confirmFrom`); a failed one leaves them to the next round. */
  private async confirmRound(): Promise<void> {
    let byName: Map<string, Lease>;
    try {
      byName = await this.listGroup();
    } catch (error) {
      this.log.warn({ err: toError(error) }, "could not list the shard Leases");
      return;
    }
    const readAt = this.elapsed();
    this.observeAll(byName, readAt);
    const { decision } = this.survey(byName, readAt);
    this.confirmFrom(byName, decision.mayAct);
  }

  private async renewMembership(lease: Lease | undefined, now: number, readAt: number): Promise<void> {
    const { client } = this.options;
    const record = recordFromSpec(lease?.spec);
    const count = String(this.options.shares);
    if (
      lease !== undefined &&
      record.holderIdentity === this.identity &&
      lease.metadata?.labels?.[SHARD_LABELS.count] === count &&
      this.memberRenewedAt !== undefined &&
      readAt - this.memberRenewedAt < this.renewAfterMs
    ) {
      return;
    }
    try {
      const spec = specFromRecord(acquiredRecord(lease ? record : undefined, this.identity, now, this.leaseDurationMs));
      const sent = this.elapsed();
      if (lease === undefined) await client.create(this.leaseObject(this.memberName, "member", spec));
      // Labelled again: the same identity may have run another count before.
      else await client.replace({ ...lease, metadata: { ...lease.metadata, labels: this.labels("member") }, spec });
      this.memberRenewedAt = sent;
    } catch (error) {
      this.log.warn({ err: toError(error) }, "could not renew the membership Lease");
    }
  }

  /** Takes (or takes again after a restart) a share; a 409 means another replica was faster. */
  private async take(share: number, lease: Lease | undefined, now: number): Promise<void> {
    const { client, name } = this.options;
    const previous = lease ? recordFromSpec(lease.spec) : undefined;
    // A share this process does not hold is a new term even if a Lease still names this identity (a restart).
    const base = previous?.holderIdentity === this.identity ? { ...previous, holderIdentity: undefined } : previous;
    const record = acquiredRecord(base, this.identity, now, this.leaseDurationMs);
    const sent = this.elapsed();
    try {
      const spec = specFromRecord(record);
      const leaseName = shareLeaseName(name, share, this.options.shares);
      if (lease === undefined) await client.create(this.leaseObject(leaseName, "share", spec));
      else await client.replace({ ...lease, spec });
    } catch (error) {
      if (!isConflict(error)) this.log.warn({ err: toError(error), share }, "could not take a share");
      return;
    }
    // Not used yet: the next round confirms it (ADR 0024), by a list made after this write that shows the
    // share still held under this term and the epoch in force this replica's count.
    this.held.set(share, { term: termOf(record), renewedAt: sent, confirmed: false });
    this.log.debug(
      { share, shares: this.options.shares, term: termOf(record), from: previous?.holderIdentity },
      "claimed a share",
    );
  }

  /** The share's fence opens: its work may start. */
  private confirm(share: number, held: Held): void {
    held.confirmed = true;
    this.log.info({ share, shares: this.options.shares, term: held.term }, "took a share");
    try {
      this.options.onGained?.(share);
    } catch (error) {
      this.log.error({ err: toError(error), share }, "onGained failed");
    }
  }

  /**
   * Records this replica's count as the one in force (ADR 0024), at the resourceVersion listed: of two
   * replicas moving it, one wins. Nobody acts under it before a later round has listed it.
   */
  private async moveEpoch(lease: Lease | undefined, now: number): Promise<boolean> {
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
      if (!isConflict(error)) this.log.warn({ err: toError(error) }, "could not move the sharding epoch");
      return false;
    }
    this.log.info(
      { shares, from: parseCount(lease?.metadata?.labels?.[SHARD_LABELS.count]) ?? null, by: this.identity },
      EPOCH_LOG.moved,
    );
    return true;
  }

  /** Renews a share held. The renewal counts from when it is sent (the round's earlier writes may have been slow). */
  private async renew(share: number, lease: Lease): Promise<void> {
    const sent = this.elapsed();
    const record = acquiredRecord(recordFromSpec(lease.spec), this.identity, this.clock.now(), this.leaseDurationMs);
    try {
      await this.options.client.replace({ ...lease, spec: specFromRecord(record) });
      this.renewedAt(share, sent, termOf(record));
    } catch (error) {
      // A conflict means someone else wrote the Lease: the next list tells who holds it.
      this.log.warn({ err: toError(error), share }, "could not renew a share");
    }
  }

  /** Stops acting on the share first (the fence refuses from now on), then hands it over. */
  private async release(share: number, lease: Lease, now: number): Promise<void> {
    this.lose(share, "assigned to another member");
    await this.releaseLease(share, lease, now);
  }

  private async releaseLease(share: number, lease: Lease, now: number): Promise<void> {
    try {
      await this.options.client.replace({
        ...lease,
        spec: specFromRecord(releasedRecord(recordFromSpec(lease.spec), now)),
      });
    } catch (error) {
      this.log.warn({ err: toError(error), share }, "could not release a share; it will expire");
    }
  }

  /**
   * Frees the expired share of a member gone (as a release would), at the version listed: as safe as taking
   * it, and 409 if its holder or another replica wrote it meanwhile.
   */
  private async free(share: number, lease: Lease, now: number): Promise<void> {
    const record = recordFromSpec(lease.spec);
    try {
      await this.options.client.replace({ ...lease, spec: specFromRecord(releasedRecord(record, now)) });
      this.log.info({ share, from: record.holderIdentity }, "freed the expired share of a member gone");
    } catch (error) {
      if (!isConflict(error)) this.log.warn({ err: toError(error), share }, "could not free an expired share");
    }
  }

  private async forget(lease: Lease): Promise<void> {
    const name = lease.metadata?.name ?? "";
    try {
      await this.options.client.delete(this.options.namespace, name, lease.metadata?.resourceVersion);
      const role = lease.metadata?.labels?.[SHARD_LABELS.role];
      this.log.info(
        { lease: name, holder: recordFromSpec(lease.spec).holderIdentity },
        role === "member" ? "deleted an expired member" : "deleted a share Lease of another count",
      );
    } catch (error) {
      this.log.debug({ err: toError(error), lease: name }, "could not delete an expired member");
    }
  }

  /**
   * Notes a renewal under `term` that this replica wrote (at the resourceVersion it listed, so nobody wrote the
   * Lease in between), sent at `at`. A renewal that lands after the fence has closed opens it again:
   * nobody else can have held the share meanwhile, since taking it is a write to the same Lease, so the term goes
   * on — the caches were kept and need no load — and `onResumed` queues the work remembered while it was closed.
   * A renewal under another term (the Lease rewritten by a process of the same identity) gives the share up.
   */
  private renewedAt(share: number, at: number, term: string): void {
    const held = this.held.get(share);
    if (held === undefined) return;
    if (term !== held.term) {
      this.lose(share, "renewed under another term");
      return;
    }
    const closed = this.elapsed() - held.renewedAt >= this.renewDeadlineMs;
    if (at > held.renewedAt) held.renewedAt = at;
    if (!closed || this.term(share) === undefined) return;
    held.closed = false;
    this.log.info({ share, term }, SHARE_LOG.reopened);
    try {
      this.options.onResumed?.(share);
    } catch (error) {
      this.log.error({ err: toError(error), share }, "onResumed failed");
    }
  }

  /**
   * Gives up the shares not renewed within the lease duration: others may take them now. Their fences closed
   * at renewDeadline (`term` says so by the clock; this logs it), and until then a late renewal may still open
   * them again.
   */
  private expireStale(): void {
    const now = this.elapsed();
    for (const [share, held] of this.held) {
      if (now - held.renewedAt >= this.leaseDurationMs) {
        this.lose(share, "not renewed within the lease duration");
      } else if (now - held.renewedAt >= this.renewDeadlineMs && held.closed !== true) {
        held.closed = true;
        this.log.info({ share, term: held.term }, SHARE_LOG.closed);
      }
    }
  }

  private lose(share: number, why: string): void {
    const held = this.held.get(share);
    if (held === undefined) return;
    this.held.delete(share);
    this.log.info({ share, shares: this.options.shares, why, used: held.confirmed }, "gave up a share");
    if (!held.confirmed) return;
    try {
      this.options.onLost?.(share);
    } catch (error) {
      this.log.error({ err: toError(error), share }, "onLost failed");
    }
  }

  private labels(role: "member" | "share" | "epoch"): Record<string, string> {
    return {
      [SHARD_LABELS.group]: this.options.name,
      [SHARD_LABELS.role]: role,
      [SHARD_LABELS.count]: String(this.options.shares),
    };
  }

  private leaseObject(leaseName: string, role: "member" | "share" | "epoch", spec: Lease["spec"]): Lease {
    return {
      apiVersion: "coordination.k8s.io/v1",
      kind: "Lease",
      metadata: { namespace: this.options.namespace, name: leaseName, labels: this.labels(role) },
      ...(spec !== undefined ? { spec } : {}),
    };
  }
}

import type { Logger } from "pino";
import { sleep, systemClock, type Clock } from "../time/clock.js";
import { toError } from "../kube/errors.js";
import { parseCount } from "./epoch.js";
import { HeldShares } from "./held-shares.js";
import type { ShardLeaseClient } from "./leader-election.js";
import {
  canAcquire,
  hasExpired,
  observeLease,
  recordFromSpec,
  releasedRecord,
  specFromRecord,
  unchangedFor,
  type Lease,
  type LeaseObservation,
} from "./lease.js";
import { monotonicNow } from "./monotonic.js";
import { ShardLeaseWrites } from "./shard-lease-writes.js";
import {
  EPOCH_LOG,
  SHARD_LABELS,
  memberLeaseName,
  shareLeaseName,
  surveyGroup,
  termOf,
  type GroupSurvey,
} from "./shard-leases.js";
import { assignShares } from "./shards.js";

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
 * it within renewDeadline. *
 * This file is the rounds: what to write, decided from each list. The Leases' names, terms and what a list of them
 * says are src/controller/shard-leases.ts, the writes src/controller/shard-lease-writes.ts, the shares held and
 * their fences src/controller/held-shares.ts.
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
  private readonly held: HeldShares;
  private readonly writes: ShardLeaseWrites;
  /** The group's Leases as last listed, each with when it was first listed so (by name). */
  private observed = new Map<string, LeaseObservation>();
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
    this.held = new HeldShares({
      shares: options.shares,
      leaseDurationMs: this.leaseDurationMs,
      renewDeadlineMs: this.renewDeadlineMs,
      elapsed: this.elapsed,
      acting: () => this.acting,
      log: this.log,
      onGained: options.onGained,
      onLost: options.onLost,
      onResumed: options.onResumed,
    });
    this.writes = new ShardLeaseWrites({
      namespace: options.namespace,
      name: options.name,
      shares: options.shares,
      identity: options.identity,
      leaseDurationMs: this.leaseDurationMs,
      renewAfterMs: this.renewAfterMs,
      client: options.client,
      clock: this.clock,
      elapsed: this.elapsed,
      log: this.log,
      memberName: this.memberName,
      held: this.held,
    });
  }

  /**
   * The term under which this replica holds `share`, or undefined when it does not hold it, or has not
   * renewed it within renewDeadline (another replica may take it once the lease duration has passed).
   */
  term(share: number): string | undefined {
    return this.held.term(share);
  }

  /** The shares this replica holds now, in order. */
  heldShares(): number[] {
    return this.held.open();
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
    for (const share of shares) this.held.lose(share, "shutting down");
    try {
      const leases = await this.options.client.list(this.options.namespace, this.selector);
      await Promise.all(
        leases.map(async (lease) => {
          const record = recordFromSpec(lease.spec);
          if (record.holderIdentity !== this.identity) return;
          const name = lease.metadata?.name ?? "";
          if (name === this.memberName) {
            await this.writes.leave(lease);
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

  /** What the list says of the group (see {@link surveyGroup}). */
  private survey(byName: Map<string, Lease>, readAt: number): GroupSurvey {
    const { name, shares } = this.options;
    const reader = { identity: this.identity, name, shares, forgetMemberAfterMs: this.forgetMemberAfterMs };
    return surveyGroup(byName, this.observed, readAt, reader);
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
      if (record.holderIdentity === this.identity && termOf(record) === held.term) this.held.confirm(share, held);
    }
  }

  /** One round: list, renew membership, work out the assignment, take, renew and release shares. */
  async round(): Promise<void> {
    const { name, shares } = this.options;
    this.rounds++;
    // A share whose fence closed (renewal overdue) is given up before anything else, even if its Lease still
    // names this replica: work dropped while it was closed is queued again when it is taken anew (a new term).
    this.held.expireStale();
    // Written into the Leases for people to read; no replica compares it with its own clock.
    const now = this.clock.now();
    let byName: Map<string, Lease>;
    try {
      byName = await this.listGroup();
    } catch (error) {
      this.log.warn({ err: toError(error) }, "could not list the shard Leases");
      this.held.expireStale();
      return;
    }
    const readAt = this.elapsed();
    this.observeAll(byName, readAt);

    await this.writes.renewMembership(byName.get(this.memberName), now, readAt);
    const { members, forget, epochLease, decision } = this.survey(byName, readAt);
    this.members = members;
    const writes: Promise<unknown>[] = forget.map((lease) => this.writes.forget(lease));
    let moved = false;
    if (!decision.mayAct) {
      // Another count is in force, or something of another count may still act: this replica's shares are
      // given up (fenced first, then released) and none is taken. It stays a member, so others see its count.
      this.acting = false;
      for (const [share] of this.held) {
        const lease = byName.get(shareLeaseName(name, share, shares));
        this.held.lose(share, "the sharding epoch is not this replica's count");
        if (lease !== undefined && recordFromSpec(lease.spec).holderIdentity === this.identity) {
          writes.push(this.writes.releaseLease(share, lease, now));
        }
      }
      const waitingFor = decision.blockers.join("; ");
      if (waitingFor !== this.waitingFor) {
        this.waitingFor = waitingFor;
        this.log.info({ shares, waitingFor, mayMove: decision.mayMove }, EPOCH_LOG.waiting);
      }
      if (decision.mayMove) moved = await this.writes.moveEpoch(epochLease, now);
      if (!moved) {
        await Promise.all(writes);
        this.held.expireStale();
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
      if (gone && unchangedFor(seen, readAt) > this.forgetMemberAfterMs) writes.push(this.writes.forget(lease));
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
        this.held.lose(share, `now held by ${record.holderIdentity ?? "nobody"}`);
      }
      if (mine.has(share)) {
        if (lease === undefined) writes.push(this.writes.take(share, undefined, now));
        else if (!ours && seen !== undefined && canAcquire(seen, this.identity, readAt)) {
          writes.push(this.writes.take(share, lease, now));
        } else if (ours && held === undefined) writes.push(this.writes.take(share, lease, now));
        else if (ours && held !== undefined && readAt - held.renewedAt >= this.renewAfterMs) {
          writes.push(this.writes.renew(share, lease));
        } else if (ours && held !== undefined && termOf(record) !== held.term) {
          // The Lease rewritten by a process of the same identity (a restart): not this process's term.
          this.held.lose(share, "renewed under another term");
        }
      } else if (ours && lease !== undefined) {
        writes.push(this.writes.release(share, lease, now));
      } else if (
        lease !== undefined &&
        seen !== undefined &&
        record.holderIdentity !== undefined &&
        !memberSet.has(record.holderIdentity) &&
        hasExpired(seen, readAt)
      ) {
        // Assigned to another member, who may not be able to tell yet that it expired (it started less than a
        // lease duration ago): freed, it is taken at that member's next round.
        writes.push(this.writes.free(share, lease, now));
      }
    }
    await Promise.all(writes);
    // Shares taken this round are confirmed by a list made now, after their writes (ADR 0024), rather than a
    // round later: a share changing hands is unused for one list, not for a round.
    if ([...this.held.values()].some((held) => !held.confirmed)) await this.confirmRound();
    this.held.expireStale();
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
}

/**
 * The shares a replica holds (ADR 0016), each with its term and when its Lease was last renewed, and the fence
 * they make: a share is used under its term only once confirmed, while the replica acts under the sharding epoch
 * (ADR 0024) and within renewDeadline of its last renewal. Tells the replica's work when a share is gained, lost,
 * or usable again. The Leases themselves are read and written by the ShardElector (src/controller/shard-election.ts).
 */
import type { Logger } from "pino";
import { toError } from "../kube/errors.js";

/** A share this replica holds: the term (which acquisition) and when it was last renewed (monotonic clock). */
export interface Held {
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

export interface HeldSharesOptions {
  /** The replica's share count (for the log). */
  shares: number;
  /** See ShardElectionOptions.leaseDurationMs. */
  leaseDurationMs: number;
  /** See ShardElectionOptions.renewDeadlineMs. */
  renewDeadlineMs: number;
  /** Times every duration (monotonic): the fence, expiry. */
  elapsed: () => number;
  /** Whether the replica acts under the sharding epoch (as of its last round): no share is used while it does not. */
  acting: () => boolean;
  log: Logger;
  /** See ShardElectionOptions.onGained. */
  onGained?: ((share: number) => void) | undefined;
  /** See ShardElectionOptions.onLost. */
  onLost?: ((share: number) => void) | undefined;
  /** See ShardElectionOptions.onResumed. */
  onResumed?: ((share: number) => void) | undefined;
}

/** The shares held, by share number, and their fences. */
export class HeldShares {
  private readonly held = new Map<number, Held>();

  constructor(private readonly options: HeldSharesOptions) {}

  get(share: number): Held | undefined {
    return this.held.get(share);
  }

  /** Notes a share just taken (not used before it is confirmed). */
  set(share: number, held: Held): void {
    this.held.set(share, held);
  }

  keys(): MapIterator<number> {
    return this.held.keys();
  }

  values(): MapIterator<Held> {
    return this.held.values();
  }

  [Symbol.iterator](): MapIterator<[number, Held]> {
    return this.held[Symbol.iterator]();
  }

  /**
   * The term under which this replica holds `share`, or undefined when it does not hold it, or has not
   * renewed it within renewDeadline (another replica may take it once the lease duration has passed).
   */
  term(share: number): string | undefined {
    const held = this.held.get(share);
    if (held === undefined || !held.confirmed || !this.options.acting()) return undefined;
    if (this.options.elapsed() - held.renewedAt >= this.options.renewDeadlineMs) return undefined;
    return held.term;
  }

  /** The shares held and usable now (a defined `term`), in order. */
  open(): number[] {
    return [...this.held.keys()].filter((s) => this.term(s) !== undefined).sort((a, b) => a - b);
  }

  /** The share's fence opens: its work may start. */
  confirm(share: number, held: Held): void {
    held.confirmed = true;
    this.options.log.info({ share, shares: this.options.shares, term: held.term }, "took a share");
    try {
      this.options.onGained?.(share);
    } catch (error) {
      this.options.log.error({ err: toError(error), share }, "onGained failed");
    }
  }

  /**
   * Notes a renewal under `term` that this replica wrote (at the resourceVersion it listed, so nobody wrote the
   * Lease in between), sent at `at`. A renewal that lands after the fence has closed opens it again:
   * nobody else can have held the share meanwhile, since taking it is a write to the same Lease, so the term goes
   * on — the caches were kept and need no load — and `onResumed` queues the work remembered while it was closed.
   * A renewal under another term (the Lease rewritten by a process of the same identity) gives the share up.
   */
  renewedAt(share: number, at: number, term: string): void {
    const held = this.held.get(share);
    if (held === undefined) return;
    if (term !== held.term) {
      this.lose(share, "renewed under another term");
      return;
    }
    const closed = this.options.elapsed() - held.renewedAt >= this.options.renewDeadlineMs;
    if (at > held.renewedAt) held.renewedAt = at;
    if (!closed || this.term(share) === undefined) return;
    held.closed = false;
    this.options.log.info({ share, term }, SHARE_LOG.reopened);
    try {
      this.options.onResumed?.(share);
    } catch (error) {
      this.options.log.error({ err: toError(error), share }, "onResumed failed");
    }
  }

  /**
   * Gives up the shares not renewed within the lease duration: others may take them now. Their fences closed
   * at renewDeadline (`term` says so by the clock; this logs it), and until then a late renewal may still open
   * them again.
   */
  expireStale(): void {
    const now = this.options.elapsed();
    for (const [share, held] of this.held) {
      if (now - held.renewedAt >= this.options.leaseDurationMs) {
        this.lose(share, "not renewed within the lease duration");
      } else if (now - held.renewedAt >= this.options.renewDeadlineMs && held.closed !== true) {
        held.closed = true;
        this.options.log.info({ share, term: held.term }, SHARE_LOG.closed);
      }
    }
  }

  lose(share: number, why: string): void {
    const held = this.held.get(share);
    if (held === undefined) return;
    this.held.delete(share);
    this.options.log.info({ share, shares: this.options.shares, why, used: held.confirmed }, "gave up a share");
    if (!held.confirmed) return;
    try {
      this.options.onLost?.(share);
    } catch (error) {
      this.options.log.error({ err: toError(error), share }, "onLost failed");
    }
  }
}

import { AsyncLocalStorage } from "node:async_hooks";
import { TerminalError } from "./controller.js";
import { shareOf } from "./shards.js";

/** What a reconcile acts under: its app's key, the app's share, and the term in which the share was held. */
export interface FenceToken {
  key: string;
  share: number;
  term: string;
}

/**
 * A write refused because this replica does not hold the app's share (any more, or under the same term). Not
 * retried: the replica that holds the share now reconciles the app.
 */
export class NotOwnedError extends TerminalError {
  constructor(message: string) {
    super(message);
    this.name = "NotOwnedError";
  }
}

export interface FenceOptions {
  shares: number;
  /** The term under which this replica holds `share` now, or undefined (`ShardElector.term`). */
  termOf: (share: number) => string | undefined;
  /**
   * Told of every reconcile `run` did not run because the share was not held (or not yet usable): whoever
   * holds the share next must reconcile the key, so it is handed back then (`ShardWork`).
   */
  skipped?: (key: string, share: number) => void;
}

/**
 * Fencing for sharded replicas (ADR 0016): a reconcile runs inside `run(key, …)`, which notes the term of the
 * app's share as it starts; every write it makes calls `check`, which refuses unless the share is still held
 * under that very term. So a replica never writes for an app it does not own, nor for one it lost and took
 * back meanwhile (the reconcile began on a state another replica may have changed since).
 */
export class Fence {
  private readonly current = new AsyncLocalStorage<FenceToken>();

  constructor(private readonly options: FenceOptions) {}

  /** The share of the app `namespace/name`. */
  shareOf(key: string): number {
    return shareOf(key, this.options.shares);
  }

  /** Whether this replica holds the app's share now. */
  owns(key: string): boolean {
    return this.options.termOf(this.shareOf(key)) !== undefined;
  }

  /**
   * Runs `fn` as the reconcile of `key` under the current term of its share; resolves undefined without
   * running it when this replica does not hold the share (and tells `skipped`).
   */
  async run<T>(key: string, fn: () => Promise<T>): Promise<T | undefined> {
    const share = this.shareOf(key);
    const term = this.options.termOf(share);
    if (term === undefined) {
      this.options.skipped?.(key, share);
      return undefined;
    }
    return await this.current.run({ key, share, term }, fn);
  }

  /** The token of the reconcile running in this async context, if any. */
  token(): FenceToken | undefined {
    return this.current.getStore();
  }

  /**
   * The token of the reconcile this write belongs to, if its share is still held under the same term; else
   * throws NotOwnedError (also for a write made outside any reconcile: every write is some app's).
   */
  check(what: string): FenceToken {
    const token = this.current.getStore();
    if (token === undefined) throw new NotOwnedError(`${what}: refused, made outside the reconcile of an app`);
    const term = this.options.termOf(token.share);
    if (term !== token.term) {
      throw new NotOwnedError(
        `${what} for ${token.key}: refused, share ${token.share} is ${term === undefined ? "no longer held" : "held under a newer term"}`,
      );
    }
    return token;
  }
}

/**
 * How many POSTs one app may make the controller send: a token bucket per app, shared by its webhooks
 * (gates, rollout, pre- and post-rollout) and its notifications, counting every attempt (retries too).
 *
 * 120 a minute, in bursts of up to 120, is far above what a rollout needs: with the default 30 s interval,
 * even the schema's 20 webhooks each asked once an interval make 40 POSTs a minute; a gate asked every
 * second (the shortest interval) makes 60; a notice goes to at most the 10 receivers of
 * `spec.notifications`, the controller's own and the post-rollout webhooks. Only retries piled on
 * failing receivers at a short interval come near it, and that is what the limit is for: an app must not
 * turn the controller into a source of traffic at whoever its author names.
 */
export const POSTS_PER_MINUTE = 120;

interface Bucket {
  tokens: number;
  at: number;
}

export interface PostLimiterOptions {
  now: () => number;
  /** Tokens added a minute. Default `POSTS_PER_MINUTE`. */
  perMinute?: number;
  /** The most tokens a bucket holds (the longest burst). Default `perMinute`. */
  burst?: number;
  /** Buckets kept at most; full buckets are dropped first (a full bucket is the same as none). Default 4096. */
  maxBuckets?: number;
}

/** Token buckets by key (an app's `namespace/name`). */
export class PostLimiter {
  readonly #buckets = new Map<string, Bucket>();
  readonly #perMs: number;
  readonly #burst: number;
  readonly #maxBuckets: number;

  constructor(private readonly options: PostLimiterOptions) {
    const perMinute = options.perMinute ?? POSTS_PER_MINUTE;
    this.#perMs = perMinute / 60_000;
    this.#burst = options.burst ?? perMinute;
    this.#maxBuckets = options.maxBuckets ?? 4096;
  }

  /** Takes one token of `key`'s bucket: whether a POST may be made now. */
  take(key: string): boolean {
    const now = this.options.now();
    const bucket = this.#fill(this.#buckets.get(key) ?? { tokens: this.#burst, at: now }, now);
    const admitted = bucket.tokens >= 1;
    if (admitted) bucket.tokens -= 1;
    this.#buckets.set(key, bucket);
    if (this.#buckets.size > this.#maxBuckets) this.#prune(now, key);
    return admitted;
  }

  /** The tokens `key` has now (the POSTs it may still make at once). */
  available(key: string): number {
    const bucket = this.#buckets.get(key);
    return bucket === undefined ? this.#burst : this.#fill({ ...bucket }, this.options.now()).tokens;
  }

  #fill(bucket: Bucket, now: number): Bucket {
    const elapsed = Math.max(0, now - bucket.at);
    bucket.tokens = Math.min(this.#burst, bucket.tokens + elapsed * this.#perMs);
    bucket.at = now;
    return bucket;
  }

  #prune(now: number, taking: string): void {
    for (const [key, bucket] of this.#buckets) {
      if (this.#fill(bucket, now).tokens >= this.#burst) this.#buckets.delete(key);
    }
    if (this.#buckets.size <= this.#maxBuckets) return;
    // Still too many: the fullest go, which lose the least by starting over full (never the one taking now).
    const fullest = [...this.#buckets].filter(([key]) => key !== taking).sort(([, a], [, b]) => b.tokens - a.tokens);
    for (const [key] of fullest) {
      if (this.#buckets.size <= this.#maxBuckets) break;
      this.#buckets.delete(key);
    }
  }
}

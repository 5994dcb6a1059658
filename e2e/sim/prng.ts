/** A source of uniform numbers in [0, 1), as `Math.random`. */
export type Random = () => number;

/**
 * mulberry32: a small, fast 32-bit generator. Not for cryptography; here it makes every simulated request
 * (which pod, which answer, how slow) reproducible from one seed.
 */
export function seededRandom(seed: number): Random {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** One of `items`, uniformly; undefined when there is none. */
export function pick<T>(items: readonly T[], random: Random): T | undefined {
  return items[Math.floor(random() * items.length)];
}

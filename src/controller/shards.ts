import { createHash } from "node:crypto";

/**
 * The pure part of sharding: which share an app falls in, and which live replica owns each share. No I/O,
 * no clock, no randomness: every replica computes the same answer from the same member list, so they agree
 * on who should own what without talking to each other (ADR 0016).
 */

/** The first 48 bits of SHA-256(text), as a number (exact in a double). */
function hash48(text: string): number {
  return createHash("sha256").update(text).digest().readUIntBE(0, 6);
}

/** The share (0 … shares−1) of the app `namespace/name`: SHA-256 of the key, modulo the number of shares. */
export function shareOf(key: string, shares: number): number {
  if (!Number.isInteger(shares) || shares < 1) throw new Error(`shares must be a positive integer, got ${shares}`);
  return hash48(key) % shares;
}

/**
 * The share label's value on the children of the apps of `share`: "<share>-of-<shares>". The count is part of
 * it, so that after a change of the share count no child reads as one of a share it is no longer in.
 */
export function shareLabelValue(share: number, shares: number): string {
  return `${share}-of-${shares}`;
}

/** The label selector of the objects labelled (`label`) as in any of `list` of `shares` shares. */
export function shareSelector(label: string, list: readonly number[], shares: number): string {
  const values = [...new Set(list)].sort((a, b) => a - b).map((share) => shareLabelValue(share, shares));
  return `${label} in (${values.join(",")})`;
}

/** The rendezvous (highest-random-weight) score of `member` for `share`: the higher, the more it wants it. */
export function rendezvousScore(member: string, share: number): number {
  return hash48(`${member}\u0000${share}`);
}

/**
 * Which shares each member owns: every share exactly once, each member `floor(shares/members)` or one more
 * (balanced within one share), chosen by rendezvous hashing with bounded loads — every (share, member) pair
 * is taken in order of its score, highest first, while the share is free and the member below its
 * capacity. A member that joins or leaves moves about the shares that must move: 1.2–1.3 fair shares on average
 * over random member lists, but when the share count is close to the member count, who holds the one share
 * more changes and the moves can cascade (8 members and 8 shares: a ninth member moves 6; shards.test.ts).
 * Members are deduplicated; with no members, nobody owns anything.
 */
export function assignShares(members: readonly string[], shares: number): Map<string, number[]> {
  const unique = [...new Set(members)].sort();
  const owned = new Map<string, number[]>(unique.map((m) => [m, []]));
  if (unique.length === 0) return owned;
  const base = Math.floor(shares / unique.length);
  const extra = shares % unique.length;
  // Who gets one share more is itself chosen by hash, so the extra does not always fall on the same names.
  const byLuck = [...unique].sort((a, b) => hash48(b) - hash48(a) || (a < b ? -1 : 1));
  const capacity = new Map(byLuck.map((m, i) => [m, base + (i < extra ? 1 : 0)]));
  const pairs: { member: string; share: number; score: number }[] = [];
  for (let share = 0; share < shares; share++) {
    for (const member of unique) pairs.push({ member, share, score: rendezvousScore(member, share) });
  }
  pairs.sort((a, b) => b.score - a.score || a.share - b.share || (a.member < b.member ? -1 : 1));
  const taken = new Set<number>();
  for (const { member, share } of pairs) {
    if (taken.has(share)) continue;
    const list = owned.get(member) ?? [];
    if (list.length >= (capacity.get(member) ?? 0)) continue;
    list.push(share);
    taken.add(share);
  }
  for (const list of owned.values()) list.sort((a, b) => a - b);
  return owned;
}

/** The owner of every share (index = share), from {@link assignShares}. */
export function ownerOfShares(members: readonly string[], shares: number): (string | undefined)[] {
  const owners = new Array<string | undefined>(shares).fill(undefined);
  for (const [member, list] of assignShares(members, shares)) for (const share of list) owners[share] = member;
  return owners;
}

import assert from "node:assert/strict";
import { describe, test } from "node:test";
import fc from "fast-check";
import { assignShares, ownerOfShares, shareLabelValue, shareOf, shareSelector } from "./shards.js";

const members = fc.uniqueArray(fc.stringMatching(/^[a-z][a-z0-9-]{0,20}$/), { minLength: 1, maxLength: 12 });
const shareCounts = fc.integer({ min: 1, max: 128 });

/** Shares whose owner differs between two assignments. */
function moved(before: (string | undefined)[], after: (string | undefined)[]): number {
  return before.filter((owner, share) => owner !== after[share]).length;
}

describe("shareOf", () => {
  test("is stable: the same key always falls in the same share (fixed values guard the hash)", () => {
    assert.equal(shareOf("shop/web", 32), shareOf("shop/web", 32));
    // SHA-256 of the key, first 48 bits, mod N: pinned so a change of hash moves no app silently.
    const pinned = ["default/app-0", "default/app-1", "team-a/checkout", "team-b/search"].map((k) => shareOf(k, 32));
    assert.deepEqual(pinned, [17, 26, 25, 25]);
  });

  test("every key falls in [0, shares)", () => {
    fc.assert(
      fc.property(fc.string(), shareCounts, (key, shares) => {
        const share = shareOf(key, shares);
        return Number.isInteger(share) && share >= 0 && share < shares;
      }),
    );
  });

  test("is fair: 32,000 app keys spread over 32 shares within ±10 % of 1,000 each", () => {
    const counts = new Array<number>(32).fill(0);
    for (let i = 0; i < 32_000; i++) {
      const share = shareOf(`ns-${i % 97}/app-${i}`, 32);
      counts[share] = (counts[share] ?? 0) + 1;
    }
    for (const [share, count] of counts.entries()) {
      assert.ok(count > 900 && count < 1100, `share ${share} has ${count} apps`);
    }
  });

  test("rejects a share count that is not a positive integer", () => {
    assert.throws(() => shareOf("a/b", 0), /positive integer/);
    assert.throws(() => shareOf("a/b", 1.5), /positive integer/);
  });
});

describe("assignShares", () => {
  const table: { members: string[]; shares: number; sizes: number[] }[] = [
    { members: [], shares: 32, sizes: [] },
    { members: ["a"], shares: 32, sizes: [32] },
    { members: ["a", "b", "c"], shares: 32, sizes: [10, 11, 11] },
    { members: ["a", "b", "c", "d", "e"], shares: 3, sizes: [0, 0, 1, 1, 1] },
    { members: ["b", "a", "b"], shares: 4, sizes: [2, 2] },
  ];
  for (const row of table) {
    test(`${row.members.length} member(s), ${row.shares} shares → sizes ${row.sizes.join(",")}`, () => {
      const sizes = [...assignShares(row.members, row.shares).values()].map((l) => l.length).sort((a, b) => a - b);
      assert.deepEqual(sizes, row.sizes);
    });
  }

  test("every share is owned exactly once, and loads differ by at most one share", () => {
    fc.assert(
      fc.property(members, shareCounts, (names, shares) => {
        const assignment = assignShares(names, shares);
        const all = [...assignment.values()].flat().sort((a, b) => a - b);
        assert.deepEqual(
          all,
          Array.from({ length: shares }, (_, i) => i),
        );
        const sizes = [...assignment.values()].map((l) => l.length);
        assert.ok(Math.max(...sizes) - Math.min(...sizes) <= 1, `sizes ${sizes.join(",")}`);
      }),
    );
  });

  test("is stable: the order of the member list does not matter", () => {
    fc.assert(
      fc.property(members, shareCounts, fc.integer(), (names, shares, seed) => {
        const shuffled = [...names].sort((a, b) => ((a.charCodeAt(0) * seed) % 7) - ((b.charCodeAt(0) * seed) % 7));
        assert.deepEqual(ownerOfShares(shuffled, shares), ownerOfShares(names, shares));
      }),
    );
  });

  test("a member that joins or leaves moves about its fair share: 2,000 joins of a fixed sample, on average", () => {
    // A fixed sample, not a property: the bound is on the average. A join can cascade when the share count is
    // close to the member count (who holds the one share more changes with the member list); the one below
    // is the worst found so far.
    const joins = fc.sample(fc.tuple(members, fc.stringMatching(/^[a-z][a-z0-9-]{0,20}$/), shareCounts), {
      seed: 17,
      numRuns: 2000,
    });
    let ratios = 0;
    let count = 0;
    for (const [names, newcomer, shares] of joins) {
      if (names.includes(newcomer)) continue;
      const before = ownerOfShares(names, shares);
      const after = ownerOfShares([...names, newcomer], shares);
      const fair = Math.ceil(shares / (names.length + 1));
      const joined = moved(before, after);
      // Leaving is the same pair of member lists the other way round.
      assert.equal(moved(after, before), joined);
      assert.ok(joined >= Math.floor(shares / (names.length + 1)), "the newcomer takes at least its fair share");
      assert.ok(joined <= 3 * fair + 2, `join moved ${joined} of ${shares} (fair ${fair})`);
      ratios += joined / fair;
      count++;
    }
    assert.ok(count > 1900);
    assert.ok(ratios / count <= 1.5, `on average a join moved ${(ratios / count).toFixed(2)} fair shares`);
  });

  test("the worst join found: 8 members and 8 shares, a ninth moves 6 (a cascade of who holds the spare)", () => {
    const names = ["a0", "k", "a--", "h86ch-q-", "a", "aa", "aa-j05", "g"];
    const before = ownerOfShares(names, 8);
    const after = ownerOfShares([...names, "a-33m"], 8);
    assert.equal(moved(before, after), 6);
  });

  test("3 replicas and 32 shares: one leaving moves its own shares and at most half a fair share (5) more", () => {
    const three = ["canaryapp-0", "canaryapp-1", "canaryapp-2"];
    for (const gone of three) {
      const before = ownerOfShares(three, 32);
      const left = three.filter((m) => m !== gone);
      const after = ownerOfShares(left, 32);
      const own = before.filter((o) => o === gone).length;
      const others = before.filter((o, share) => o !== gone && after[share] !== o).length;
      assert.ok(others <= 5, `${gone} leaving moved ${others} shares of the others besides its own ${own}`);
    }
  });
});

describe("share labels", () => {
  test("a share's label names the share count, and a selector names each share once, in order", () => {
    assert.equal(shareLabelValue(3, 32), "3-of-32");
    assert.equal(shareSelector("canaryapp.io/share", [7, 3, 7], 32), "canaryapp.io/share in (3-of-32,7-of-32)");
  });
});

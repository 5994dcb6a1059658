import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { decideEpoch, parseCount, type EpochView } from "./epoch.js";

const member = (identity: string, count: number | undefined) => ({ identity, count });
const share = (name: string, holder: string, count: number | undefined) => ({ name, holder, count });

interface Row {
  name: string;
  count: number;
  view: EpochView;
  act: boolean;
  move: boolean;
}

const ROWS: Row[] = [
  {
    name: "first replica of a new group: nothing recorded, nothing held: moves the epoch, does not act yet",
    count: 4,
    view: { inForce: undefined, members: [], held: [] },
    act: false,
    move: true,
  },
  {
    name: "the epoch is its count, nothing else held: acts",
    count: 4,
    view: { inForce: 4, members: [member("b", 4)], held: [share("g-4-share-1", "b", 4)] },
    act: true,
    move: false,
  },
  {
    name: "the epoch is its count, but a share of the old count is still held (its holder has not seen the move)",
    count: 8,
    view: { inForce: 8, members: [], held: [share("g-4-share-1", "old", 4)] },
    act: false,
    move: false,
  },
  {
    name: "rolling update 1 → 4: the unsharded leader still holds its Lease",
    count: 4,
    view: { inForce: 1, members: [], held: [share("g", "leader", 1)] },
    act: false,
    move: false,
  },
  {
    name: "rolling update 1 → 4: the leader released its Lease and nothing of count 1 is live",
    count: 4,
    view: { inForce: 1, members: [member("b", 4)], held: [] },
    act: false,
    move: true,
  },
  {
    name: "rolling update 4 → 8: a replica of 4 is still a live member (even holding nothing)",
    count: 8,
    view: { inForce: 4, members: [member("old", 4), member("new2", 8)], held: [] },
    act: false,
    move: false,
  },
  {
    name: "rolling update 4 → 8: members of 4 gone, but one of their shares not yet expired",
    count: 8,
    view: { inForce: 4, members: [member("new2", 8)], held: [share("g-4-share-3", "old", 4)] },
    act: false,
    move: false,
  },
  {
    name: "rolling update 4 → 8: every replica of 4 gone and its shares released or expired",
    count: 8,
    view: { inForce: 4, members: [member("new2", 8)], held: [] },
    act: false,
    move: true,
  },
  {
    name: "the old count still in force while a replica of the new count has appeared: the old ones keep acting",
    count: 4,
    view: { inForce: 4, members: [member("new", 8)], held: [share("g-4-share-0", "a", 4)] },
    act: true,
    move: false,
  },
  {
    name: "two counts side by side, the epoch at a third: nobody moves it (nobody takes it from the other)",
    count: 4,
    view: { inForce: 2, members: [member("x", 8)], held: [] },
    act: false,
    move: false,
  },
  {
    name: "a member of a release without counts (no label) is live: its count is unknown, the epoch stays",
    count: 4,
    view: { inForce: undefined, members: [member("legacy", undefined)], held: [] },
    act: false,
    move: false,
  },
  {
    name: "a share Lease of a release without counts is held: the epoch is not recorded over it",
    count: 4,
    view: { inForce: undefined, members: [], held: [share("g-share-3", "legacy", undefined)] },
    act: false,
    move: false,
  },
  {
    name: "the epoch its count, a share Lease without a count held (an older release, which knows no epoch)",
    count: 4,
    view: { inForce: 4, members: [], held: [share("g-share-3", "legacy", undefined)] },
    act: false,
    move: false,
  },
  {
    name: "rolling back 8 → 4: replicas of 8 gone, their shares expired: the epoch moves back",
    count: 4,
    view: { inForce: 8, members: [member("c", 4)], held: [] },
    act: false,
    move: true,
  },
  {
    name: "unsharded (count 1): the epoch at 32 while 32-share members live: the leader does not lead",
    count: 1,
    view: { inForce: 32, members: [member("s", 32)], held: [share("g-32-share-0", "s", 32)] },
    act: false,
    move: false,
  },
  {
    name: "unsharded (count 1): its own leader Lease held (by another leader of count 1) does not stop it",
    count: 1,
    view: { inForce: 1, members: [], held: [share("g", "other-leader", 1)] },
    act: true,
    move: false,
  },
];

describe("decideEpoch", () => {
  for (const row of ROWS) {
    test(row.name, () => {
      const decision = decideEpoch(row.count, row.view);
      assert.equal(decision.mayAct, row.act, `may act: ${decision.blockers.join("; ")}`);
      assert.equal(decision.mayMove, row.move, `may move: ${decision.blockers.join("; ")}`);
      assert.equal(decision.blockers.length === 0, row.act, "blockers are named exactly when it may not act");
    });
  }

  test("never both may act and may move; acting needs the epoch at its count", () => {
    for (const row of ROWS) {
      const decision = decideEpoch(row.count, row.view);
      assert.ok(!(decision.mayAct && decision.mayMove), row.name);
      if (decision.mayAct) assert.equal(row.view.inForce, row.count, row.name);
    }
  });
});

describe("parseCount", () => {
  test("a positive integer label, or nothing", () => {
    assert.equal(parseCount("32"), 32);
    assert.equal(parseCount("1"), 1);
    for (const bad of [undefined, "", "0", "-1", "07", "3.5", "x"]) assert.equal(parseCount(bad), undefined, bad);
  });
});

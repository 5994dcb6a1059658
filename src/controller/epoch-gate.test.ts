import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { pino } from "pino";
import { EpochGate } from "./epoch-gate.js";
import { FakeClock } from "./fake-clock.test-helpers.js";
import { FakeLeases } from "./fake-leases.test-helpers.js";
import { ShardElector } from "./shard-election.js";
import { recordFromSpec } from "./lease.js";

const log = pino({ level: "silent" });

function setup() {
  const clock = new FakeClock();
  const leases = new FakeLeases();
  const gate = new EpochGate({ namespace: "ns", name: "group", identity: "leader", client: leases, log, clock });
  const sharded = (identity: string, shares: number) =>
    new ShardElector({ namespace: "ns", name: "group", shares, identity, client: leases, log, clock });
  return { clock, leases, gate, sharded };
}

describe("EpochGate (the unsharded leader as the 1-share case)", () => {
  test("a new group: the epoch is recorded at 1, the leader may take its Lease and lead; it is a member of 1", async () => {
    const { leases, gate } = setup();
    assert.equal(await gate.mayLead("acquire"), true);
    assert.equal(await gate.mayLead("confirm"), true);
    const epoch = leases.leases.get("group-epoch");
    assert.equal(epoch?.metadata?.labels?.["canaryapp.io/shard-count"], "1");
    const member = [...leases.leases.values()].find(
      (l) => l.metadata?.labels?.["canaryapp.io/lease-role"] === "member",
    );
    assert.equal(member?.metadata?.labels?.["canaryapp.io/shard-count"], "1");
    await gate.leave();
    assert.equal(
      [...leases.leases.values()].some((l) => l.metadata?.labels?.["canaryapp.io/lease-role"] === "member"),
      false,
      "left the group",
    );
  });

  test("its member and epoch Leases are those a sharded replica writes, with a count of 1", async () => {
    const { clock, leases, gate, sharded } = setup();
    await gate.mayLead("acquire");
    const labels = (role: string) => ({
      "canaryapp.io/shard-group": "group",
      "canaryapp.io/lease-role": role,
      "canaryapp.io/shard-count": "1",
    });
    const member = [...leases.leases.values()].find((l) => l.metadata?.name?.startsWith("group-member-"));
    assert.deepEqual(member?.metadata?.labels, labels("member"));
    assert.deepEqual(recordFromSpec(member?.spec), {
      holderIdentity: "leader",
      leaseDurationSeconds: 15,
      acquireTimeMs: clock.now(),
      renewTimeMs: clock.now(),
      leaseTransitions: 0,
    });
    const epoch = leases.leases.get("group-epoch");
    assert.deepEqual(epoch?.metadata?.labels, labels("epoch"));
    assert.equal(recordFromSpec(epoch?.spec).holderIdentity, "shares=1");
    // A sharded replica of 1 share and the same identity takes both as its own: the epoch is its count, and
    // renewing the membership changes neither its labels nor its term.
    const s = sharded("leader", 1);
    await clock.advance(2_000);
    await s.round();
    assert.equal(s.epoch().acting, true);
    assert.equal(leases.leases.get("group-epoch")?.metadata?.resourceVersion, epoch?.metadata?.resourceVersion);
    const renewed = leases.leases.get(member?.metadata?.name ?? "");
    assert.deepEqual(renewed?.metadata?.labels, labels("member"));
    assert.equal(recordFromSpec(renewed?.spec).leaseTransitions, 0);
    assert.equal(recordFromSpec(renewed?.spec).renewTimeMs, clock.now());
  });

  test("standing by: the member Lease written once per renewal period (6 s), nothing listed or read again", async () => {
    const { clock, leases, gate } = setup();
    const member = () =>
      [...leases.leases.values()].find((l) => l.metadata?.labels?.["canaryapp.io/lease-role"] === "member");
    await gate.standBy();
    assert.equal(member()?.metadata?.labels?.["canaryapp.io/shard-count"], "1", "a member of count 1");
    const writes = leases.writes;
    for (let t = 0; t < 6; t++) {
      await clock.advance(2_000);
      await gate.standBy();
    }
    assert.equal(leases.lists, 0);
    assert.equal(leases.writes - writes, 2, "written again at 6 s and 12 s");
    assert.equal(recordFromSpec(member()?.spec).renewTimeMs, clock.now());
    // Someone else wrote it meanwhile: the write conflicts, and the next one reads it first.
    const stored = member();
    if (stored !== undefined)
      leases.leases.set(stored.metadata?.name ?? "", {
        ...stored,
        metadata: { ...stored.metadata, resourceVersion: "999" },
      });
    await clock.advance(6_000);
    await gate.standBy();
    await gate.standBy();
    assert.equal(recordFromSpec(member()?.spec).renewTimeMs, clock.now(), "renewed after reading it again");
  });

  test("sharded replicas in force: the leader neither takes its Lease nor moves the epoch, and says why", async () => {
    const { clock, gate, sharded } = setup();
    const s = sharded("s", 4);
    for (let i = 0; i < 3; i++) {
      await s.round();
      await clock.advance(2_000);
    }
    assert.deepEqual(s.heldShares(), [0, 1, 2, 3]);
    assert.equal(await gate.mayLead("acquire"), false);
    assert.match(gate.blockedBy() ?? "", /epoch in force is 4 shares; member s runs 4 shares/);
    // The sharded replica, for its part, sees a live member of count 1 and keeps acting (the epoch is its own).
    await s.round();
    assert.deepEqual(s.heldShares(), [0, 1, 2, 3]);
  });

  test("a standby of count 1 keeps a replica of 4 from moving the epoch; once it leaves, the epoch moves", async () => {
    const { clock, gate, sharded } = setup();
    assert.equal(await gate.mayLead("acquire"), true);
    const s = sharded("s", 4);
    for (let i = 0; i < 5; i++) {
      await gate.mayLead("acquire");
      await s.round();
      await clock.advance(2_000);
    }
    assert.deepEqual(s.heldShares(), [], "waits while a member of 1 lives");
    assert.match(s.epoch().waitingFor ?? "", /member leader runs 1 share/);
    await gate.leave();
    await s.round();
    assert.deepEqual(s.heldShares(), [0, 1, 2, 3], "the epoch moved to 4 and the shares were taken");
    assert.equal(await gate.mayLead("acquire"), false, "the leader may not come back while 4 is in force");
  });
});

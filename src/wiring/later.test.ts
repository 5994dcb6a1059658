import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { pino } from "pino";
import { Controller } from "../controller/controller.js";
import { ShardWork } from "../controller/shard-work.js";
import { shareOf } from "../controller/shards.js";
import { Later, lateQueue } from "./later.js";

const log = pino({ level: "silent" });
const newController = (): Controller => new Controller({ name: "test", reconcile: () => Promise.resolve(), log });

describe("Later", () => {
  test("gives what was set, undefined too, and is set once", () => {
    const value = new Later<number>("the number");
    assert.equal(value.set(7), 7);
    assert.equal(value.get(), 7);
    assert.throws(() => value.set(8), /the number is set twice/);
    const none = new Later<number | undefined>("the shard work");
    none.set(undefined);
    assert.equal(none.get(), undefined);
  });

  test("read before it is set, throws, naming what it holds", () => {
    assert.throws(() => new Later<number>("the controller").get(), /the controller is used before it is made/);
  });
});

describe("lateQueue", () => {
  test("reaches the Controller once it is set, not before", () => {
    const controller = new Later<Controller>("the controller");
    const queue = lateQueue(controller, new Later<ShardWork | undefined>("the shard work"));
    assert.throws(() => queue.add("shop/web"), /the controller is used before it is made/);
    const made = controller.set(newController());
    queue.add("shop/web");
    queue.add("shop/api");
    queue.remove("shop/api");
    assert.equal(made.queue.len(), 1);
  });

  test("unsharded, an app judged again is queued", () => {
    const controller = new Later<Controller>("the controller");
    const work = new Later<ShardWork | undefined>("the shard work");
    const queue = lateQueue(controller, work);
    work.set(undefined);
    const made = controller.set(newController());
    queue.requeue("shop/web");
    assert.equal(made.queue.len(), 1);
  });

  test("sharded, an app judged again is offered to the shard work: queued only if its share is held", () => {
    const controller = new Later<Controller>("the controller");
    const work = new Later<ShardWork | undefined>("the shard work");
    const queue = lateQueue(controller, work);
    const held = shareOf("shop/web", 2);
    work.set(
      new ShardWork({
        shares: 2,
        termOf: (share) => (share === held ? "term-1" : undefined),
        queue,
        appKeys: () => [],
        log,
      }),
    );
    const made = controller.set(newController());
    const other = ["shop/a", "shop/b", "shop/c", "shop/d"].find((key) => shareOf(key, 2) !== held);
    assert.ok(other !== undefined, "a key of the share not held");
    queue.requeue(other);
    assert.equal(made.queue.len(), 0);
    queue.requeue("shop/web");
    assert.equal(made.queue.len(), 1);
  });
});

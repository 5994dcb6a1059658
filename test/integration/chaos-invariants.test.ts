/**
 * The chaos suite's invariant checker on made-up histories (no cluster needed): a clean rollout counts
 * nothing, and each kind of fault it exists to catch is counted under its own invariant.
 */
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import {
  checkWorld,
  INVARIANTS,
  isSkipOf,
  mentions,
  plannedSteps,
  type AppScript,
  type Invariant,
} from "../chaos/invariants.js";
import type { AppPoint, Change } from "../chaos/world.js";

const v0 = "reg/shop:v0";
const v1 = "reg/shop:v1";
const v10 = "reg/shop:v10";
const plan = plannedSteps(10, 30);

/** A history built change by change, resourceVersions in order. */
class World {
  readonly changes: Change[] = [];
  private rv = 1;
  private at = 0;
  private app: AppPoint = {
    name: "shop",
    specImage: v0,
    primaryImage: undefined,
    phase: undefined,
    stage: undefined,
    canaryImage: undefined,
    failedImages: [],
  };
  private push(change: Omit<Change, "rv" | "at">): this {
    this.at += 2_000;
    this.changes.push({ ...change, rv: this.rv++, at: this.at } as Change);
    return this;
  }
  appChange(patch: Partial<AppPoint>): this {
    this.app = { ...this.app, ...patch };
    return this.push({ kind: "CanaryApp", type: "MODIFIED", object: structuredClone(this.app) });
  }
  deployment(track: "primary" | "secondary", image: string | undefined, ready = true): this {
    const name = `shop-${track}`;
    if (image === undefined) return this.push({ kind: "Deployment", type: "DELETED", object: { name, image, ready } });
    return this.push({ kind: "Deployment", type: "MODIFIED", object: { name, image, ready } });
  }
  route(primary: number, secondary: number): this {
    return this.push({
      kind: "VirtualService",
      type: "MODIFIED",
      object: {
        name: "shop",
        routes: [
          [
            ["primary", primary],
            ["secondary", secondary],
          ],
        ],
      },
    });
  }
  event(reason: string, message: string): this {
    return this.push({
      kind: "Event",
      type: "ADDED",
      object: { name: `e${this.rv}`, app: "shop", reason, message, count: 1 },
    });
  }
  /** Created and Healthy on v0. */
  created(): this {
    return this.appChange({ primaryImage: v0, phase: "Healthy" }).deployment("primary", v0).route(100, 0);
  }
  /** A test of `image`: the secondary, then `weights` on the route. */
  test(image: string, weights: number[], secondaryReady = true): this {
    this.appChange({ specImage: image, canaryImage: image, stage: "Stepping" }).deployment(
      "secondary",
      image,
      secondaryReady,
    );
    for (const w of weights) this.route(100 - w, w);
    return this;
  }
  promoted(image: string): this {
    return this.appChange({ stage: "Promoting" })
      .deployment("primary", image)
      .route(100, 0)
      .deployment("secondary", undefined)
      .appChange({ primaryImage: image, canaryImage: undefined, stage: undefined })
      .event("Promoted", `promoted ${image}: the primary runs it and takes all traffic`);
  }
  rolledBack(image: string, records = 1): this {
    const failed = Array.from({ length: records }, () => ({ image, failedAt: "t", reason: "AnalysisFailed" }));
    return this.appChange({ failedImages: failed, stage: "RollingBack" })
      .route(100, 0)
      .deployment("secondary", undefined)
      .appChange({ canaryImage: undefined, stage: undefined, phase: "Failed" })
      .event("RolledBack", `rolled back ${image} (AnalysisFailed): errors; traffic is back on ${v0}`);
  }
}

const passing: AppScript[] = [{ name: "shop", initialImage: v0, waves: [{ image: v1, passes: true }] }];
const failingScript: AppScript[] = [{ name: "shop", initialImage: v0, waves: [{ image: v1, passes: false }] }];

function violated(world: World, scripts: AppScript[]): Partial<Record<Invariant, number>> {
  const { counts } = checkWorld(world.changes, scripts, plan);
  return Object.fromEntries(Object.entries(counts).filter(([, n]) => n > 0));
}

describe("chaos invariant checker", () => {
  test("a clean promotion and a clean rollback violate nothing", () => {
    assert.deepEqual(violated(new World().created().test(v1, [10, 20, 30]).promoted(v1), passing), {});
    assert.deepEqual(violated(new World().created().test(v1, [10]).rolledBack(v1), failingScript), {});
    const { counts } = checkWorld(new World().created().test(v1, [10, 20, 30]).promoted(v1).changes, passing, plan);
    assert.deepEqual(Object.keys(counts), [...INVARIANTS], "every invariant is reported");
  });

  test("a skipped step breaks the route sequence", () => {
    assert.deepEqual(violated(new World().created().test(v1, [10, 30]).promoted(v1), passing), {
      routeSequenceEqualsPlan: 1,
    });
  });

  test("a step withheld while Prometheus is silent and then given again is the same step", () => {
    const world = new World().created().test(v1, [10, 20, 0, 20, 30]).promoted(v1);
    assert.deepEqual(violated(world, passing), {});
  });

  test("weights that do not sum to 100 are counted", () => {
    const world = new World().created().test(v1, [10, 20, 30]);
    world.changes.push({
      rv: 999,
      at: 0,
      kind: "VirtualService",
      type: "MODIFIED",
      object: {
        name: "shop",
        routes: [
          [
            ["primary", 80],
            ["secondary", 30],
          ],
        ],
      },
    });
    assert.equal(checkWorld(world.changes, passing, plan).counts.weightsSumTo100, 1);
  });

  test("weight on a secondary that is not ready is counted", () => {
    const world = new World().created().test(v1, [10], false);
    assert.equal(checkWorld(world.changes, failingScript, plan).counts.noWeightOnUnreadySecondary, 1);
  });

  test("a generation not yet observed keeps a ready secondary serving if its template is unchanged", () => {
    const secondary = (template: string, ready: boolean) => ({
      name: "shop-secondary",
      image: v1,
      ready,
      template,
      available: true,
    });
    const world = new World().created().test(v1, [10]);
    world.changes.push(
      { rv: 900, at: 0, kind: "Deployment", type: "MODIFIED", object: secondary("t1", true) },
      // An annotation changed (generation moved, not yet observed): the same pods serve.
      { rv: 901, at: 0, kind: "Deployment", type: "MODIFIED", object: secondary("t1", false) },
    );
    assert.equal(checkWorld(world.changes, failingScript, plan).counts.noWeightOnUnreadySecondary, 0);
    // A new template not yet rolled out: its pods are not counted yet.
    world.changes.push({ rv: 902, at: 0, kind: "Deployment", type: "MODIFIED", object: secondary("t2", false) });
    assert.equal(checkWorld(world.changes, failingScript, plan).counts.noWeightOnUnreadySecondary, 1);
  });

  test("a failing image on the primary is counted, and the end state is wrong", () => {
    const counts = violated(new World().created().test(v1, [10]).promoted(v1), failingScript);
    assert.equal(counts.noFailingOrSupersededImageOnPrimary, 1);
    assert.ok((counts.endState ?? 0) >= 1);
  });

  test("a failed image recorded twice, or an Event missing, is counted", () => {
    assert.ok(
      (violated(new World().created().test(v1, [10]).rolledBack(v1, 2), failingScript).failedImageRecordedOnce ?? 0) >=
        1,
    );
    const world = new World().created().test(v1, [10, 20, 30]);
    world.appChange({ stage: "Promoting" }).deployment("primary", v1).route(100, 0).deployment("secondary", undefined);
    world.appChange({ primaryImage: v1, canaryImage: undefined, stage: undefined });
    assert.deepEqual(violated(world, passing), { impliedEvents: 1 });
  });

  test("an image is named only as itself, not as the prefix of another", () => {
    assert.ok(mentions(`promoted ${v1}: done`, v1));
    assert.ok(!mentions(`promoted ${v10}: done`, v1));
    assert.ok(mentions(`rolled back ${v1} (x)`, v1));
  });
});

test("the primary changing to an image that is not being promoted is counted", () => {
  const world = new World().created().test(v1, [10]).deployment("primary", v1);
  assert.equal(checkWorld(world.changes, passing, plan).counts.noFailingOrSupersededImageOnPrimary, 1);
});

test("a skipped step is told apart from any other wrong sequence", () => {
  assert.ok(isSkipOf([10, 30], [10, 20, 30]));
  assert.ok(isSkipOf([30], [10, 20, 30]));
  assert.ok(!isSkipOf([10, 20], [10, 20, 30]), "a test cut short is not a skip");
  assert.ok(!isSkipOf([20, 10, 30], [10, 20, 30]), "out of order");
  assert.ok(!isSkipOf([10, 20, 20, 30], [10, 20, 30]));
  const world = new World().created().test(v1, [10, 30]).promoted(v1);
  assert.equal(checkWorld(world.changes, passing, plan).skippedStepsOnly, 1);
});

test("a failing image judged on a first step the route never carried counts as a skipped step", () => {
  const world = new World().created().test(v1, []).rolledBack(v1);
  const result = checkWorld(world.changes, failingScript, plan);
  assert.equal(result.counts.routeSequenceEqualsPlan, 1);
  assert.equal(result.skippedStepsOnly, 1);
});

test("a primary created with the first image after spec.image moved on is right; with another image it is not", () => {
  const late = new World().appChange({ specImage: v1 }).deployment("primary", v0);
  assert.equal(checkWorld(late.changes, passing, plan).counts.noFailingOrSupersededImageOnPrimary, 0);
  const wrong = new World().appChange({ specImage: v1 }).deployment("primary", v1);
  assert.equal(checkWorld(wrong.changes, passing, plan).counts.noFailingOrSupersededImageOnPrimary, 1);
});

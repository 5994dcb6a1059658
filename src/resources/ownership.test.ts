import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { ADOPT_ANNOTATION } from "../api/types.js";
import { seedApp } from "./fixtures.test-helpers.js";
import fc from "fast-check";
import type { CanaryApp } from "../api/types.js";
import {
  clashCandidates,
  nameClash,
  ownedByAnotherApp,
  reservedNames,
  takeOverRefusal,
  type AppIdentity,
  type ExistingObject,
} from "./ownership.js";

describe("takeOverRefusal: may an existing object be taken over?", () => {
  const app = seedApp();
  const service = (metadata: ExistingObject["metadata"]): ExistingObject => ({
    kind: "Service",
    metadata: { name: "canaryapp-sample", namespace: "demo", ...metadata },
  });
  const cases: { name: string; existing: ExistingObject | undefined; refused: boolean }[] = [
    { name: "nothing there: create it", existing: undefined, refused: false },
    {
      name: "controlled by this CanaryApp already",
      existing: service({ ownerReferences: [{ uid: app.metadata.uid, controller: true, kind: "CanaryApp" }] }),
      refused: false,
    },
    { name: "a user's object: left alone", existing: service({}), refused: true },
    {
      name: "controlled by something else (e.g. the seed operator's CanaryApp)",
      existing: service({ ownerReferences: [{ uid: "other", controller: true, kind: "CanaryApp", name: "x" }] }),
      refused: true,
    },
    {
      name: "owned, but not as controller, by this app: not enough",
      existing: service({ ownerReferences: [{ uid: app.metadata.uid, controller: false }] }),
      refused: true,
    },
    {
      name: "handed over to this CanaryApp by annotation",
      existing: service({ annotations: { [ADOPT_ANNOTATION]: "canaryapp-sample" } }),
      refused: false,
    },
    {
      name: "handed over to another CanaryApp",
      existing: service({ annotations: { [ADOPT_ANNOTATION]: "someone-else" } }),
      refused: true,
    },
  ];
  for (const c of cases) {
    test(c.name, () => assert.equal(takeOverRefusal(c.existing, app) !== undefined, c.refused));
  }

  test("the refusal names the object and the one line that hands it over", () => {
    assert.equal(
      takeOverRefusal(service({}), app),
      "Service demo/canaryapp-sample already exists and it is not ours, so it is left unchanged; to hand it over to " +
        "this CanaryApp: kubectl -n demo annotate service canaryapp-sample canaryapp.io/adopt=canaryapp-sample",
    );
  });
});

describe("nameClash: may an app write children under the names it needs?", () => {
  const appNamed = (name: string, uid: string, created: string): CanaryApp => ({
    ...seedApp(),
    metadata: { name, namespace: "demo", uid, creationTimestamp: created },
  });
  const web = appNamed("web", "uid-web", "2026-01-01T00:00:00Z");
  const webPrimary = appNamed("web-primary", "uid-wp", "2026-01-01T00:01:00Z");
  const lookupOf =
    (...apps: CanaryApp[]) =>
    (name: string) =>
      apps.find((a) => a.metadata.name === name);

  test("the later app is refused, naming the earlier one and the shared name", () => {
    const clash = nameClash(webPrimary, lookupOf(web, webPrimary));
    assert.equal(clash?.reason, "NameTaken");
    assert.match(clash?.message ?? "", /CanaryApp web, created earlier .* owns the name web-primary/);
  });
  test("the earlier app runs on, whatever came after it", () => {
    assert.equal(nameClash(web, lookupOf(web, webPrimary)), undefined);
  });
  test("created in the same second: the name decides, the same way for both", () => {
    const a = appNamed("web", "uid-a", "2026-01-01T00:00:00Z");
    const b = appNamed("web-secondary", "uid-b", "2026-01-01T00:00:00Z");
    const lookup = lookupOf(a, b);
    assert.equal(nameClash(a, lookup), undefined);
    assert.equal(nameClash(b, lookup)?.reason, "NameTaken");
  });
  test("apps whose names only look alike do not clash", () => {
    const lookup = lookupOf(
      web,
      appNamed("web-primary-x", "u1", "2025-01-01T00:00:00Z"),
      appNamed("webs", "u2", "2025-01-01T00:00:00Z"),
    );
    assert.equal(nameClash(web, lookup), undefined);
  });
  test("an app never clashes with itself", () => {
    assert.equal(nameClash(web, lookupOf(web)), undefined);
  });

  test("clashCandidates finds every app that shares a name, and only those (property)", () => {
    const name = fc.stringMatching(/^[a-z]{1,3}(-(primary|secondary|[a-z]{1,2})){0,3}$/);
    fc.assert(
      fc.property(name, name, (a, b) => {
        fc.pre(a !== b);
        const shares = reservedNames(a).some((n) => reservedNames(b).includes(n));
        assert.equal(clashCandidates(a).includes(b), shares, `${a} vs ${b}`);
      }),
      { numRuns: 2000 },
    );
  });
});

describe("ownedByAnotherApp: may a cached child (it carries our label) be written by this app?", () => {
  const app = seedApp();
  app.metadata.creationTimestamp = "2026-01-01T00:01:00Z";
  const other: AppIdentity = {
    metadata: { name: "other", uid: "uid-other", creationTimestamp: "2026-01-01T00:00:00Z" },
  };
  const later: AppIdentity = {
    metadata: { name: "later", uid: "uid-later", creationTimestamp: "2026-01-01T00:02:00Z" },
  };
  const lookup = (name: string) => [other, later].find((a) => a.metadata.name === name);
  const child = (ref: { uid: string; name: string; kind?: string } | undefined): ExistingObject => ({
    kind: "Service",
    metadata: {
      name: "canaryapp-sample",
      namespace: "demo",
      ...(ref ? { ownerReferences: [{ controller: true, kind: ref.kind ?? "CanaryApp", ...ref }] } : {}),
    },
  });
  const cases: { name: string; existing: ExistingObject; refused: boolean }[] = [
    {
      name: "this app's own child",
      existing: child({ uid: app.metadata.uid ?? "", name: "canaryapp-sample" }),
      refused: false,
    },
    { name: "a child of another app that exists", existing: child({ uid: "uid-other", name: "other" }), refused: true },
    {
      name: "a child of an app of this name deleted before (its children not yet collected)",
      existing: child({ uid: "uid-old", name: "canaryapp-sample" }),
      refused: false,
    },
    { name: "a child of an app since deleted", existing: child({ uid: "uid-gone", name: "gone" }), refused: false },
    {
      name: "an app of that name exists, but another one than the owner (created again)",
      existing: child({ uid: "uid-other-before", name: "other" }),
      refused: false,
    },
    {
      name: "a child of a later app, written before the two apps' caches showed each other",
      existing: child({ uid: "uid-later", name: "later" }),
      refused: false,
    },
    { name: "no owner at all", existing: child(undefined), refused: false },
    {
      name: "owned by something that is no CanaryApp",
      existing: child({ uid: "x", name: "y", kind: "Rollout" }),
      refused: false,
    },
  ];
  for (const c of cases) {
    test(c.name, () => {
      const refusal = ownedByAnotherApp(c.existing, app, lookup);
      assert.equal(refusal !== undefined, c.refused, refusal);
      if (c.refused) assert.match(refusal ?? "", /belongs to CanaryApp other/);
    });
  }
});

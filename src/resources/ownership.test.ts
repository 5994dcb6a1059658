import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { ADOPT_ANNOTATION } from "../api/types.js";
import { seedApp } from "./fixtures.test-helpers.js";
import { takeOverRefusal, type ExistingObject } from "./ownership.js";

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

import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { observeDeployment } from "./deployment.js";

const deployment = (status: Record<string, number>, generation = 2, replicas = 2) => ({
  metadata: { generation },
  spec: { replicas, template: { spec: { containers: [{ name: "app", image: "img:v2" }] } } },
  status,
});

describe("observeDeployment", () => {
  test("missing", () => assert.equal(observeDeployment(undefined), null));

  const cases: [string, ReturnType<typeof deployment>, boolean][] = [
    [
      "rolled out",
      deployment({ observedGeneration: 2, replicas: 2, updatedReplicas: 2, availableReplicas: 2, readyReplicas: 2 }),
      true,
    ],
    [
      "template not yet seen",
      deployment({ observedGeneration: 1, replicas: 2, updatedReplicas: 2, availableReplicas: 2 }),
      false,
    ],
    [
      "new pods not all updated",
      deployment({ observedGeneration: 2, replicas: 2, updatedReplicas: 1, availableReplicas: 2 }),
      false,
    ],
    [
      "new pods not available",
      deployment({ observedGeneration: 2, replicas: 2, updatedReplicas: 2, availableReplicas: 1 }),
      false,
    ],
    [
      "old pods still there",
      deployment({ observedGeneration: 2, replicas: 3, updatedReplicas: 2, availableReplicas: 3 }),
      false,
    ],
    ["no status yet", deployment({}), false],
  ];
  for (const [name, input, available] of cases) {
    test(name, () => {
      const observed = observeDeployment(input);
      assert.equal(observed?.available, available);
      assert.equal(observed?.image, "img:v2");
      assert.equal(observed?.replicas, 2);
    });
  }
});

describe("observeDeployment: available pods of the current template (spec.scaling: weighted)", () => {
  const cases: [string, ReturnType<typeof deployment>, number | undefined][] = [
    [
      "scaled up and available",
      deployment({ observedGeneration: 2, replicas: 4, updatedReplicas: 4, availableReplicas: 4 }, 2, 4),
      4,
    ],
    [
      "scaling up: two of four there",
      deployment({ observedGeneration: 2, replicas: 4, updatedReplicas: 4, availableReplicas: 2 }, 2, 4),
      2,
    ],
    [
      "the scale not yet seen",
      deployment({ observedGeneration: 1, replicas: 2, updatedReplicas: 2, availableReplicas: 2 }, 2, 4),
      undefined,
    ],
    [
      "old pods taken off",
      deployment({ observedGeneration: 2, replicas: 3, updatedReplicas: 1, availableReplicas: 3 }),
      1,
    ],
    ["no status yet", deployment({}), undefined],
  ];
  for (const [name, input, expected] of cases) {
    test(name, () => assert.equal(observeDeployment(input)?.currentAvailable, expected));
  }
});

import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { observeDeployment } from "./deployment.js";
import { readyCondition } from "../rollout/status-conditions.js";

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

describe("observeDeployment: pods the cluster refuses to create", () => {
  const refusedBy = (message: string, available: number) => ({
    metadata: { generation: 2 },
    spec: { replicas: 2, template: { spec: { containers: [{ name: "app", image: "web:v1" }] } } },
    status: {
      observedGeneration: 2,
      replicas: available,
      updatedReplicas: available,
      availableReplicas: available,
      conditions: [
        { type: "Available", status: "False" },
        { type: "ReplicaFailure", status: "True", reason: "FailedCreate", message },
      ],
    },
  });
  const psa = 'pods "web-primary-7d9f-x" is forbidden: violates PodSecurity "restricted:latest": runAsNonRoot != true';

  test("ReplicaFailure (Pod Security admission, a quota) is carried as it is said", () => {
    assert.equal(observeDeployment(refusedBy(psa, 0))?.podsRefused, psa);
  });
  test("and cut to a bounded length", () => {
    assert.equal(observeDeployment(refusedBy("x".repeat(5000), 0))?.podsRefused?.length, 512);
  });
  test("not once the Deployment is available", () => {
    assert.equal(observeDeployment(refusedBy(psa, 2))?.podsRefused, undefined);
  });
  test("Ready says why the primary is not available", () => {
    const primary = observeDeployment(refusedBy(psa, 0));
    const ready = readyCondition(primary, 2);
    assert.deepEqual([ready.status, ready.reason], ["False", "PodsRefused"]);
    assert.match(ready.message, /the primary's pods cannot be created: pods .* violates PodSecurity/);
  });
});

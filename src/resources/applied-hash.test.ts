import assert from "node:assert/strict";
import { describe, test } from "node:test";
import fc from "fast-check";
import {
  alreadyApplied,
  APPLIED_HASH_ANNOTATION,
  isSubset,
  stableJson,
  withAppliedHash,
  quantityValue,
  sameQuantity,
} from "./applied-hash.js";

describe("isSubset", () => {
  test("server defaults and other fields do not count", () => {
    assert.ok(isSubset({ a: 1, b: { c: "x" } }, { a: 1, b: { c: "x", d: 2 }, e: true }));
  });
  test("a changed value counts", () => {
    assert.ok(!isSubset({ spec: { replicas: 2 } }, { spec: { replicas: 3 } }));
  });
  test("arrays match element by element and by length", () => {
    assert.ok(isSubset([{ a: 1 }], [{ a: 1, b: 2 }]));
    assert.ok(!isSubset([{ a: 1 }], [{ a: 1 }, { a: 2 }]));
    assert.ok(!isSubset([{ a: 1 }, { a: 2 }], [{ a: 2 }, { a: 1 }]));
  });
  test("type mismatches", () => {
    assert.ok(!isSubset({ a: {} }, { a: [] }));
    assert.ok(!isSubset({ a: 1 }, null));
    assert.ok(!isSubset({ a: "1" }, { a: 1 }));
  });
  test("every value is a subset of itself (property)", () => {
    fc.assert(fc.property(fc.jsonValue(), (v) => isSubset(v, structuredClone(v))));
  });
});

describe("applied hash", () => {
  const desired: { metadata: { name: string; annotations: Record<string, string> }; spec: { replicas: number } } = {
    metadata: { name: "x", annotations: { keep: "me" } },
    spec: { replicas: 2 },
  };

  test("stable across key order", () => {
    assert.equal(stableJson({ a: 1, b: { c: 2, d: 3 } }), stableJson({ b: { d: 3, c: 2 }, a: 1 }));
    const reordered: typeof desired = { spec: { replicas: 2 }, metadata: { annotations: { keep: "me" }, name: "x" } };
    assert.equal(
      withAppliedHash(desired).metadata.annotations[APPLIED_HASH_ANNOTATION],
      withAppliedHash(reordered).metadata.annotations[APPLIED_HASH_ANNOTATION],
    );
  });

  test("the cluster's copy with server-added fields matches; a hand edit or a removed field does not", () => {
    const applied = withAppliedHash(desired);
    const inCluster = { ...structuredClone(applied), status: { ready: 1 }, spec: { replicas: 2, paused: false } };
    assert.ok(alreadyApplied(applied, inCluster));
    assert.ok(!alreadyApplied(applied, { ...inCluster, spec: { replicas: 5 } }), "hand edit is seen");
    const fewerFields = withAppliedHash({ metadata: { name: "x" }, spec: { replicas: 2 } });
    assert.ok(!alreadyApplied(fewerFields, inCluster), "a field the controller stopped setting is seen");
    assert.ok(!alreadyApplied(applied, undefined));
  });

  test("the input is not mutated", () => {
    const copy = structuredClone(desired);
    withAppliedHash(desired);
    assert.deepEqual(desired, copy);
  });
});

describe("comparing in the API server's canonical form", () => {
  test("quantities compare by value, in every notation the API server accepts", () => {
    const same: [unknown, unknown][] = [
      [1, "1"],
      ["0.5", "500m"],
      ["1024Mi", "1Gi"],
      ["1.5Gi", "1536Mi"],
      ["1e3", "1k"],
      ["2000m", "2"],
      [0.1, "100m"],
    ];
    for (const [a, b] of same) assert.ok(sameQuantity(a, b), `${String(a)} = ${String(b)}`);
    const different: [unknown, unknown][] = [
      ["1", "1Ki"],
      ["500m", "5"],
      ["1Gi", "1G"],
      ["abc", "abc"],
      ["1", undefined],
    ];
    for (const [a, b] of different) assert.ok(!sameQuantity(a, b), `${String(a)} ≠ ${String(b)}`);
    assert.equal(quantityValue("1.5Gi"), 1.5 * 2 ** 30);
    assert.equal(quantityValue("12x"), undefined);
  });

  test("a listed Deployment (no apiVersion/kind, canonical quantities) counts as applied", () => {
    const desired = {
      apiVersion: "apps/v1",
      kind: "Deployment",
      metadata: { name: "a-primary", annotations: { "canaryapp.io/applied-hash": "h" } },
      spec: {
        template: {
          spec: { containers: [{ name: "app", resources: { requests: { cpu: 1, memory: "1024Mi" } } }] },
        },
      },
    };
    const listed = {
      metadata: { name: "a-primary", annotations: { "canaryapp.io/applied-hash": "h" }, uid: "u" },
      spec: {
        replicas: 2,
        template: {
          spec: { containers: [{ name: "app", resources: { requests: { cpu: "1", memory: "1Gi" } } }] },
        },
      },
    };
    assert.ok(alreadyApplied(desired, listed));
    const changed = structuredClone(listed);
    const container = changed.spec.template.spec.containers[0];
    if (container) container.resources.requests.cpu = "2";
    assert.ok(!alreadyApplied(desired, changed), "a different quantity is a change");
  });

  test("only values under resources.requests/limits are read as quantities", () => {
    assert.ok(!isSubset({ spec: { replicas: 1 } }, { spec: { replicas: "1" } }));
    assert.ok(!isSubset({ metadata: { labels: { v: "1k" } } }, { metadata: { labels: { v: "1000" } } }));
  });
});

describe("drift that changes what a child does", () => {
  const vs = {
    spec: { http: [{ name: "canary", route: [{ destination: { host: "h", subset: "primary" }, weight: 100 }] }] },
  };
  test("a hand-added fault or match on the canary route is drift", () => {
    const withFault = structuredClone(vs) as { spec: { http: Record<string, unknown>[] } };
    const route = withFault.spec.http[0];
    if (route) route["fault"] = { abort: { httpStatus: 500, percentage: { value: 100 } } };
    assert.ok(!isSubset(vs, withFault));
    const withMatch = structuredClone(vs) as { spec: { http: Record<string, unknown>[] } };
    const matched = withMatch.spec.http[0];
    if (matched) matched["match"] = [{ uri: { prefix: "/" } }];
    assert.ok(!isSubset(vs, withMatch));
    assert.ok(isSubset(vs, structuredClone(vs)));
  });
  test("a paused Deployment is drift; an omitted false is not", () => {
    const want = { spec: { paused: false } };
    assert.ok(isSubset(want, { spec: {} }));
    assert.ok(!isSubset(want, { spec: { paused: true } }));
  });
});

import assert from "node:assert/strict";
import { describe, test } from "node:test";
import type { Informer, ObjectWithMeta } from "../controller/informer.js";
import { EitherInformer } from "./credential-secrets.js";

type Obj = ObjectWithMeta & { label: string };

/** A cache holding `objects`, synced or not, recording the handlers given to it. */
function cache(objects: Obj[], synced = true): Informer<Obj> & { adds: number } {
  const key = (ns: string, name: string) => `${ns}/${name}`;
  const byKey = new Map(objects.map((o) => [key(o.metadata?.namespace ?? "", o.metadata?.name ?? ""), o]));
  return {
    adds: 0,
    start: () => undefined,
    stop: () => Promise.resolve(),
    hasSynced: () => synced,
    get: (ns, name) => byKey.get(key(ns, name)),
    list: (ns) => objects.filter((o) => ns === undefined || o.metadata?.namespace === ns),
    size: () => objects.length,
    onAdd() {
      this.adds += 1;
    },
    onUpdate: () => undefined,
    onDelete: () => undefined,
  };
}

const secret = (namespace: string, name: string, label: string): Obj => ({ metadata: { namespace, name }, label });

describe("EitherInformer: the Secrets of either credentials label, read as one", () => {
  const neutral = cache([secret("shop", "prom", "credentials"), secret("shop", "both", "credentials")]);
  const legacy = cache([secret("shop", "hook", "prometheus-credentials"), secret("shop", "both", "legacy")]);
  const either = new EitherInformer([neutral, legacy]);

  test("a Secret with either label is found; one with neither is not", () => {
    assert.equal(either.get("shop", "prom")?.label, "credentials");
    assert.equal(either.get("shop", "hook")?.label, "prometheus-credentials");
    assert.equal(either.get("shop", "token"), undefined);
    assert.equal(either.get("other", "prom"), undefined);
  });

  test("a Secret with both labels is listed once", () => {
    assert.deepEqual(
      either
        .list("shop")
        .map((o) => o.metadata?.name)
        .sort(),
      ["both", "hook", "prom"],
    );
  });

  test("synced only once every selection is; handlers reach every selection", () => {
    assert.equal(new EitherInformer([neutral, cache([], false)]).hasSynced(), false);
    assert.equal(either.hasSynced(), true);
    either.onAdd(() => undefined);
    assert.deepEqual([neutral.adds, legacy.adds], [1, 1]);
  });
});

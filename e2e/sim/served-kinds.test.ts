import assert from "node:assert/strict";
import { test } from "node:test";
import { pino } from "pino";
import { servedKinds, type ResourceType } from "./served-kinds.js";

const log = pino({ level: "silent" });
const routes: ResourceType = { group: "gateway.networking.k8s.io", version: "v1", plural: "httproutes" };
const gateways: ResourceType = { ...routes, plural: "gateways" };
const fail = (code: number) => Promise.reject(Object.assign(new Error(`HTTP ${code}`), { code }));

test("a kind whose list answers 404 is not served; one that lists is", async () => {
  const served = await servedKinds(
    (type) => (type.plural === "httproutes" ? Promise.resolve({ items: [] }) : fail(404)),
    [routes, gateways],
    undefined,
    log,
  );
  assert.deepEqual([...served], ["httproutes"]);
});

test("403 across all namespaces: asked again in the namespace watched", async () => {
  const asked: (string | undefined)[] = [];
  const served = await servedKinds(
    (_type, namespace) => {
      asked.push(namespace);
      return namespace === undefined ? fail(403) : Promise.resolve({ items: [] });
    },
    [routes],
    "shop",
    log,
  );
  assert.deepEqual([[...served], asked], [["httproutes"], [undefined, "shop"]]);
});

test("a passing failure is tried again; one that lasts is taken as not served", async () => {
  let calls = 0;
  const flaky = () => (++calls < 3 ? fail(503) : Promise.resolve({ items: [] }));
  assert.deepEqual([...(await servedKinds(flaky, [routes], undefined, log, { retryMs: 1 }))], ["httproutes"]);
  assert.deepEqual(
    [...(await servedKinds(() => fail(500), [routes], undefined, log, { retryMs: 1, attempts: 2 }))],
    [],
  );
});

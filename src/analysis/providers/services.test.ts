import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { serviceRefusal, ServiceNotKnownYet, ServiceVerdicts, type ServiceLookupResult } from "./services.js";

const web = { name: "web", namespace: "shop" };

describe("serviceRefusal: which Services a name may reach through", () => {
  test("a table of Services", () => {
    const table: [string, ServiceLookupResult, RegExp | undefined][] = [
      ["ClusterIP with a selector", { found: { type: "ClusterIP", selector: { app: "web" } } }, undefined],
      ["no type (ClusterIP) with a selector", { found: { selector: { app: "web" } } }, undefined],
      [
        "ExternalName",
        { found: { type: "ExternalName", externalName: "metadata.google.internal" } },
        /^is an ExternalName Service: its name resolves to metadata\.google\.internal/,
      ],
      ["ClusterIP without a selector", { found: { type: "ClusterIP" } }, /^has no selector/],
      ["an empty selector", { found: { type: "ClusterIP", selector: {} } }, /^has no selector/],
      ["a null selector", { found: { selector: null } }, /^has no selector/],
      ["NodePort", { found: { type: "NodePort", selector: { app: "web" } } }, /^is of type NodePort/],
      ["LoadBalancer", { found: { type: "LoadBalancer", selector: { app: "web" } } }, /^is of type LoadBalancer/],
      ["none", { missing: true }, /^does not exist$/],
      ["not readable", { forbidden: true }, /^could not be read: the controller has no right/],
    ];
    for (const [what, result, expected] of table) {
      const refused = serviceRefusal(result);
      if (expected === undefined) assert.equal(refused, undefined, what);
      else assert.match(refused ?? "(used)", expected, what);
    }
  });
});

/** A lookup whose answers the test sets, counting calls; each call waits until released when `hold` is set. */
function fakeLookup() {
  const state = {
    answers: new Map<string, ServiceLookupResult | Error>(),
    calls: 0,
    hold: false,
    pending: [] as (() => void)[],
  };
  const lookup = (s: { name: string; namespace: string }): Promise<ServiceLookupResult> => {
    state.calls++;
    const answer = () => {
      const a = state.answers.get(`${s.namespace}/${s.name}`) ?? { missing: true };
      return a instanceof Error ? Promise.reject(a) : Promise.resolve(a);
    };
    if (!state.hold) return answer();
    return new Promise((resolve, reject) => state.pending.push(() => void answer().then(resolve, reject)));
  };
  return { state, lookup };
}

const selected: ServiceLookupResult = { found: { type: "ClusterIP", selector: { app: "web" } } };
const external: ServiceLookupResult = { found: { type: "ExternalName", externalName: "evil.example" } };

describe("ServiceVerdicts", () => {
  test("known throws until the first verdict is in, then answers from it; the apps that asked are told", async () => {
    const { state, lookup } = fakeLookup();
    state.answers.set("shop/web", selected);
    const told: string[][] = [];
    const verdicts = new ServiceVerdicts({ lookup, now: () => 0, changed: (keys) => told.push([...keys]) });
    assert.throws(() => verdicts.known(web, "shop/a"), ServiceNotKnownYet);
    assert.throws(() => verdicts.known(web, "shop/b"), /Service shop\/web: looking it up/);
    assert.equal(await verdicts.current(web), undefined);
    assert.equal(verdicts.known(web), undefined);
    assert.equal(state.calls, 1, "one lookup for every question asked while it ran");
    assert.deepEqual(told, [["shop/a", "shop/b"]]);
  });

  test("current answers from a verdict at most freshMs old, and looks up again after", async () => {
    const { state, lookup } = fakeLookup();
    state.answers.set("shop/web", selected);
    let now = 0;
    const verdicts = new ServiceVerdicts({ lookup, now: () => now, freshMs: 10_000 });
    assert.equal(await verdicts.current(web), undefined);
    now = 10_000;
    state.answers.set("shop/web", external);
    assert.equal(await verdicts.current(web), undefined, "still fresh");
    assert.equal(state.calls, 1);
    now = 10_001;
    assert.match((await verdicts.current(web)) ?? "", /ExternalName/);
    assert.equal(state.calls, 2);
  });

  test("a stale verdict is still the vet's answer while a refresh runs; a changed one tells the askers", async () => {
    const { state, lookup } = fakeLookup();
    state.answers.set("shop/web", selected);
    let now = 0;
    const told: string[][] = [];
    const verdicts = new ServiceVerdicts({ lookup, now: () => now, changed: (keys) => told.push([...keys]) });
    await verdicts.current(web, "shop/a");
    told.length = 0;
    now = 60_000;
    state.answers.set("shop/web", external);
    state.hold = true;
    assert.equal(verdicts.known(web), undefined, "the last verdict, however old");
    assert.equal(state.calls, 2, "a refresh started");
    assert.equal(verdicts.known(web), undefined);
    assert.equal(state.calls, 2, "one refresh at a time");
    state.pending.shift()?.();
    assert.match((await verdicts.current(web)) ?? "", /ExternalName/);
    assert.deepEqual(told, [["shop/a"]]);
    // The same verdict again tells no one.
    now = 120_000;
    state.hold = false;
    await verdicts.current(web);
    assert.deepEqual(told, [["shop/a"]]);
  });

  test("a lookup that fails rejects current, leaves known unknown, and is tried again at the next question", async () => {
    const { state, lookup } = fakeLookup();
    state.answers.set("shop/web", new Error("connection refused"));
    const failures: string[] = [];
    const verdicts = new ServiceVerdicts({
      lookup,
      now: () => 0,
      failed: (s, err) => failures.push(`${s.namespace}/${s.name}: ${(err as Error).message}`),
    });
    await assert.rejects(verdicts.current(web), /connection refused/);
    assert.throws(() => verdicts.known(web), ServiceNotKnownYet);
    // That question started a lookup too (it fails the same way): let it end.
    await new Promise((resolve) => setImmediate(resolve));
    state.answers.set("shop/web", selected);
    assert.equal(await verdicts.current(web), undefined);
    assert.deepEqual(failures, ["shop/web: connection refused", "shop/web: connection refused"]);
    assert.equal(state.calls, 3);
  });

  test("it remembers at most maxEntries Services, forgetting the least recently asked about", async () => {
    const { state, lookup } = fakeLookup();
    const verdicts = new ServiceVerdicts({ lookup, now: () => 0, maxEntries: 2 });
    const a = { name: "a", namespace: "shop" };
    const b = { name: "b", namespace: "shop" };
    const c = { name: "c", namespace: "shop" };
    await verdicts.current(a);
    await verdicts.current(b);
    await verdicts.current(a);
    await verdicts.current(c);
    assert.equal(state.calls, 3);
    await verdicts.current(a);
    assert.equal(state.calls, 3, "a was asked about recently: kept");
    await verdicts.current(b);
    assert.equal(state.calls, 4, "b was forgotten");
  });
});

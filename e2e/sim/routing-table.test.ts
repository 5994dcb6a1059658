import assert from "node:assert/strict";
import { test } from "node:test";
import { gatewayApiApp, headerRule, pod } from "./fixtures.test-helpers.js";
import { buildAppViews } from "./mesh-view.js";
import { simRequest } from "./request-match.js";
import { plainRule, routingState, ruleFor, trackWeights } from "./routing-table.js";

const [view] = buildAppViews(
  gatewayApiApp("web", "shop", [90, 10], [pod("web", "shop", "primary", "p", "web:v1")], {
    rules: [headerRule("web", "x-canary", "always")],
  }),
);

test("ruleFor: the first rule that takes the request; plainRule: the one a request without headers takes", () => {
  assert.ok(view?.mesh);
  assert.equal(ruleFor(view.mesh, simRequest({ "x-canary": "always" }, 80))?.name, "canary-by-header");
  assert.equal(plainRule(view.mesh, 80)?.name, "primary-secondary");
  assert.equal(ruleFor({ ...view.mesh, rules: view.mesh.rules.slice(0, 1) }, simRequest({}, 80)), undefined);
});

test("trackWeights and routingState, as /state shows them", () => {
  assert.ok(view?.mesh);
  assert.deepEqual(trackWeights(plainRule(view.mesh, 80)?.destinations ?? []), { primary: 90, secondary: 10 });
  const state = routingState(view.mesh);
  assert.deepEqual(state.rules[1]?.destinations, [
    { host: "web-primary.shop.svc.cluster.local", track: "primary", weight: 90, exists: true },
    { host: "web-secondary.shop.svc.cluster.local", track: "secondary", weight: 10, exists: true },
  ]);
});

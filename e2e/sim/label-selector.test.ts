/** Label selectors as k8s.io/apimachinery LabelSelectorAsSelector applies them. */
import assert from "node:assert/strict";
import { test } from "node:test";
import { selectorMatches } from "./label-selector.js";

test("matchLabels and each operator of matchExpressions must all hold; empty selects all", () => {
  const labels = { team: "shop", env: "prod" };
  assert.equal(selectorMatches({}, labels), true);
  assert.equal(selectorMatches({ matchLabels: { team: "shop" } }, labels), true);
  assert.equal(selectorMatches({ matchLabels: { team: "shop", env: "dev" } }, labels), false);
  assert.equal(
    selectorMatches({ matchExpressions: [{ key: "env", operator: "In", values: ["prod", "dev"] }] }, labels),
    true,
  );
  assert.equal(
    selectorMatches({ matchExpressions: [{ key: "env", operator: "NotIn", values: ["prod"] }] }, labels),
    false,
  );
  assert.equal(
    selectorMatches({ matchExpressions: [{ key: "tier", operator: "NotIn", values: ["x"] }] }, labels),
    true,
  );
  assert.equal(selectorMatches({ matchExpressions: [{ key: "team", operator: "Exists" }] }, labels), true);
  assert.equal(selectorMatches({ matchExpressions: [{ key: "team", operator: "DoesNotExist" }] }, labels), false);
  assert.equal(selectorMatches({ matchExpressions: [{ key: "team", operator: "Sometimes" }] }, labels), false);
});

import assert from "node:assert/strict";
import { test } from "node:test";
import { LABELS } from "../api/types.js";
import { shareOf } from "../controller/shards.js";
import { shareLabelled } from "./caches.js";

const child = (labels: Record<string, string>) => ({ metadata: { namespace: "shop", name: "web-primary", labels } });

test("shareLabelled: a child is loaded by its label only when it carries its app's share under the current count", () => {
  const labelled = shareLabelled(4);
  const share = shareOf("shop/web", 4);
  const other = (share + 1) % 4;
  const cases: [string, Record<string, string>, boolean][] = [
    ["its app's share of 4", { [LABELS.app]: "web", [LABELS.share]: `${share}-of-4` }, true],
    ["another share of 4", { [LABELS.app]: "web", [LABELS.share]: `${other}-of-4` }, false],
    ["its share under another count", { [LABELS.app]: "web", [LABELS.share]: `${shareOf("shop/web", 2)}-of-2` }, false],
    ["no share label (written unsharded)", { [LABELS.app]: "web" }, false],
    ["an object of no app (always kept)", {}, true],
  ];
  for (const [name, labels, expected] of cases) assert.equal(labelled(child(labels)), expected, name);
});

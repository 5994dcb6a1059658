import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { appLink, appOfLocation } from "./links.js";

describe("deep links", () => {
  const cases: [string, { hash: string; pathname: string }, string | undefined][] = [
    ["the overview", { hash: "", pathname: "/" }, undefined],
    ["the overview by its hash", { hash: "#/", pathname: "/app/shop/web" }, undefined],
    ["an app by its hash", { hash: "#/shop/web", pathname: "/" }, "shop/web"],
    ["an app by its path", { hash: "", pathname: "/app/shop/web" }, "shop/web"],
    ["a trailing slash", { hash: "", pathname: "/app/shop/web/" }, "shop/web"],
    ["the hash wins over the path", { hash: "#/other/api", pathname: "/app/shop/web" }, "other/api"],
    ["escaped names", { hash: "#/shop/web%2Dv2", pathname: "/" }, "shop/web-v2"],
    ["not an app", { hash: "#/shop", pathname: "/app/shop" }, undefined],
  ];
  for (const [name, location, want] of cases) test(name, () => assert.equal(appOfLocation(location), want));

  test("an app's link leads back to it", () => {
    assert.equal(appLink("shop/web"), "#/shop/web");
    const hash = appLink("shop/web");
    assert.equal(appOfLocation({ hash, pathname: "/" }), "shop/web");
  });
});

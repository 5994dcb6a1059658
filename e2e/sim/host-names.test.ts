/** Host names as istio.io/istio pkg/config/host/name.go and Envoy's virtual host lookup compare them. */
import assert from "node:assert/strict";
import { test } from "node:test";
import { domainFit, hostsOverlap, narrowerHost } from "./host-names.js";

// name.go, Name.Matches: bi-directional wildcard overlap.
test("hostsOverlap: equal names, a wildcard over its names, two wildcards one within the other", () => {
  assert.equal(hostsOverlap("web.example.com", "web.example.com"), true);
  assert.equal(hostsOverlap("web.example.com", "api.example.com"), false);
  assert.equal(hostsOverlap("*.example.com", "web.example.com"), true);
  assert.equal(hostsOverlap("web.example.com", "*.example.com"), true);
  assert.equal(hostsOverlap("*.example.com", "web.example.org"), false);
  assert.equal(hostsOverlap("*.com", "*.example.com"), true);
  assert.equal(hostsOverlap("*", "anything.at.all"), true);
});

test("narrowerHost: a name over a wildcard, the longer wildcard", () => {
  assert.equal(narrowerHost("*.example.com", "web.example.com"), "web.example.com");
  assert.equal(narrowerHost("*.com", "*.example.com"), "*.example.com");
  assert.equal(narrowerHost("*", "*"), "*");
});

// Envoy (source/common/router/config_impl.cc, RouteMatcher::findVirtualHost): exact domains first, then
// suffix wildcards longest first, then `*`.
test("domainFit: an exact domain beats the longest wildcard, which beats `*`", () => {
  const host = "web.example.com";
  const fits = ["*", "*.com", "*.example.com", "web.example.com"].map((d) => domainFit(d, host) ?? -1);
  assert.deepEqual(
    [...fits].sort((a, b) => a - b),
    fits,
  );
  assert.equal(domainFit("api.example.com", host), undefined);
  assert.equal(domainFit("*.example.com", "example.com"), undefined, "a wildcard needs something before its suffix");
  assert.equal(domainFit("WEB.example.com", host), Number.MAX_SAFE_INTEGER, "domains are case-insensitive");
});

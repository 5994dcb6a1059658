import assert from "node:assert/strict";
import { test } from "node:test";
import { prometheusHost } from "./reconciler.js";

test("prometheusHost: the analyses in flight are bounded per host and port of the app's Prometheus", () => {
  assert.equal(prometheusHost("http://prometheus.monitoring:9090/api/v1"), "prometheus.monitoring:9090");
  assert.equal(prometheusHost("https://metrics.example.com"), "metrics.example.com");
  assert.equal(prometheusHost("not a url"), "not a url");
  assert.equal(prometheusHost(undefined), "");
});

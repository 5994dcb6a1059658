import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { ConfigError, loadConfig, usage } from "./config.js";

describe("--prometheus-url-policy", () => {
  test("absent means the default policy; the flag and PROMETHEUS_URL_POLICY give entries", () => {
    assert.equal(loadConfig([], {}).prometheusURLPolicy, undefined);
    assert.deepEqual(
      loadConfig(["--prometheus-url-policy=*.svc, https://prom.example.com/a"], {}).prometheusURLPolicy,
      ["*.svc", "https://prom.example.com/a"],
    );
    assert.deepEqual(loadConfig([], { PROMETHEUS_URL_POLICY: "*" }).prometheusURLPolicy, ["*"]);
  });

  test("an entry that is not understood stops the controller at start, naming the flag", () => {
    assert.throws(
      () => loadConfig(["--prometheus-url-policy=ftp://x"], {}),
      (e: unknown) => e instanceof ConfigError && /^--prometheus-url-policy: "ftp:\/\/x"/.test(e.message),
    );
  });

  test("--help documents the flag and how to widen it", () => {
    assert.match(usage(), /--prometheus-url-policy <value>\s+\$PROMETHEUS_URL_POLICY: [^$]*\*\s+for\s+anywhere/);
  });
});

import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { ConfigError, loadConfig } from "./config.js";

describe("loadConfig", () => {
  test("defaults", () => {
    const config = loadConfig([], {});
    assert.equal(config.workers, 20);
    assert.deepEqual(config.namespaces, []);
    assert.deepEqual(config.httpAddress, { host: "0.0.0.0", port: 8080 });
    assert.equal(config.leaderElection.enabled, true);
    assert.equal(config.leaderElection.namespace, "default");
    assert.equal(config.defaultPrometheusURL, undefined);
    assert.equal(config.logLevel, "info");
    assert.equal(config.shards, 1, "one leader does all the work unless sharding is asked for");
  });

  test("shards from the flag or SHARDS", () => {
    assert.equal(loadConfig(["--shards=32"], {}).shards, 32);
    assert.equal(loadConfig([], { SHARDS: "8" }).shards, 8);
  });

  test("flags win over environment", () => {
    const config = loadConfig(["--workers=4", "--namespaces", "a, b", "--leader-elect=false"], {
      WORKERS: "8",
      WATCH_NAMESPACES: "c",
      POD_NAMESPACE: "ops",
      PROMETHEUS_URL: "http://prom:9090",
    });
    assert.equal(config.workers, 4);
    assert.deepEqual(config.namespaces, ["a", "b"]);
    assert.equal(config.leaderElection.enabled, false);
    assert.equal(config.leaderElection.namespace, "ops");
    assert.equal(config.defaultPrometheusURL, "http://prom:9090");
  });

  test("http address forms", () => {
    assert.deepEqual(loadConfig(["--http-address=127.0.0.1:0"], {}).httpAddress, { host: "127.0.0.1", port: 0 });
    assert.deepEqual(loadConfig([], { HTTP_ADDRESS: ":9000" }).httpAddress, { host: "0.0.0.0", port: 9000 });
  });

  const invalid: [string, string[], Record<string, string>, RegExp][] = [
    ["workers not a number", ["--workers=x"], {}, /--workers: "x" is not a whole number/],
    ["workers zero", [], { WORKERS: "0" }, /--workers/],
    ["unknown flag", ["--nope=1"], {}, /unknown flag --nope/],
    ["bad url", ["--prometheus-url=prom:9090"], {}, /not an http\(s\) URL/],
    ["bad log level", [], { LOG_LEVEL: "loud" }, /--log-level: "loud"/],
    ["bad boolean", ["--leader-elect=maybe"], {}, /not true or false/],
    ["bad port", ["--http-address=:99999"], {}, /--http-address/],
    ["shards zero", ["--shards=0"], {}, /--shards: "0" is not a whole number from 1/],
    ["shards without leases", ["--shards=4", "--leader-elect=false"], {}, /--shards: .* needs --leader-elect/],
    ["positional", ["serve"], {}, /unexpected argument "serve"/],
  ];
  for (const [name, argv, env, message] of invalid) {
    test(`rejects: ${name}`, () => {
      assert.throws(
        () => loadConfig(argv, env),
        (e: unknown) => e instanceof ConfigError && message.test(e.message),
      );
    });
  }

  test("--allowed-hosts and --allowed-gateways: lists, checked, empty by default", () => {
    const none = loadConfig([], {});
    assert.deepEqual([none.allowedHosts, none.allowedGateways], [[], []]);
    const some = loadConfig(
      ["--allowed-hosts=*.example.com, api.example.org", "--allowed-gateways=istio-system/*"],
      {},
    );
    assert.deepEqual(some.allowedHosts, ["*.example.com", "api.example.org"]);
    assert.deepEqual(some.allowedGateways, ["istio-system/*"]);
    assert.deepEqual(loadConfig([], { ALLOWED_GATEWAYS: "istio-system/public-gw" }).allowedGateways, [
      "istio-system/public-gw",
    ]);
    assert.throws(() => loadConfig(["--allowed-hosts=https://x"], {}), /--allowed-hosts: "https:\/\/x"/);
    assert.throws(() => loadConfig(["--allowed-gateways=public-gw"], {}), /--allowed-gateways: "public-gw"/);
  });
});

import assert from "node:assert/strict";
import { describe, test } from "node:test";
import fc from "fast-check";
import {
  allowsUrl,
  controllerUrlPolicy,
  judgeUrl,
  parseUrlPolicy,
  serviceNamed,
  UrlPolicyError,
  type UrlJudgement,
} from "./url-policy.js";

describe("URL policy", () => {
  const defaults = controllerUrlPolicy(undefined, "http://prometheus.monitoring:9090");

  test("the default allows in-cluster Services and the controller's own Prometheus, nothing else", () => {
    const table: [string, boolean][] = [
      ["http://prometheus.istio-system.svc:9090", true],
      ["https://prom.team-a.svc.cluster.local/api", true],
      ["http://prometheus.monitoring:9090", true],
      ["http://prometheus.monitoring:9090/", true],
      ["http://prometheus.monitoring:9091", false],
      ["http://prometheus.monitoring", false],
      ["http://attacker.example.com:8080", false],
      ["http://127.0.0.1:8080", false],
      ["http://169.254.169.254/latest/meta-data", false],
      ["http://svc:9090", false],
      ["http://evil.svc.example.com", false],
      ["http://kubernetes.default.svc.cluster.local.evil.com", false],
      ["ftp://prometheus.istio-system.svc", false],
      ["not a url", false],
    ];
    for (const [url, allowed] of table) assert.equal(allowsUrl(defaults, url), allowed, url);
  });

  test("a URL prefix allows its path and below, on the same scheme, host and port only", () => {
    const policy = parseUrlPolicy(["https://metrics.example.com/team-a"]);
    const table: [string, boolean][] = [
      ["https://metrics.example.com/team-a", true],
      ["https://metrics.example.com/team-a/", true],
      ["https://metrics.example.com/team-a/prometheus", true],
      ["https://metrics.example.com:443/team-a", true],
      ["https://metrics.example.com/team-ab", false],
      ["https://metrics.example.com/team-b", false],
      ["http://metrics.example.com/team-a", false],
      ["https://metrics.example.com:8443/team-a", false],
      ["https://user:pw@metrics.example.com.evil.io/team-a", false],
    ];
    for (const [url, allowed] of table) assert.equal(allowsUrl(policy, url), allowed, url);
  });

  test("hosts match exactly, with an optional port; *.suffix matches names below the suffix only", () => {
    const policy = parseUrlPolicy(["127.0.0.1:9090", "prometheus", "*.monitoring.svc"]);
    assert.equal(allowsUrl(policy, "http://127.0.0.1:9090"), true);
    assert.equal(allowsUrl(policy, "http://127.0.0.1:9091"), false);
    assert.equal(allowsUrl(policy, "http://prometheus:1234/x"), true);
    assert.equal(allowsUrl(policy, "http://PROMETHEUS:1234"), true);
    assert.equal(allowsUrl(policy, "http://a.monitoring.svc"), true);
    assert.equal(allowsUrl(policy, "http://monitoring.svc"), false);
    assert.equal(allowsUrl(policy, "http://amonitoring.svc"), false);
  });

  test("* allows every http(s) URL and still no other scheme", () => {
    const policy = parseUrlPolicy(["*"]);
    fc.assert(
      fc.property(fc.webUrl(), (url) => allowsUrl(policy, url)),
      { numRuns: 200 },
    );
    assert.equal(allowsUrl(policy, "file:///etc/passwd"), false);
  });

  test("an explicit policy replaces the default list, and the controller's own Prometheus stays allowed", () => {
    const policy = controllerUrlPolicy(["prom.example.com"], "http://127.0.0.1:9090");
    assert.equal(allowsUrl(policy, "http://prom.example.com"), true);
    assert.equal(allowsUrl(policy, "http://127.0.0.1:9090"), true);
    assert.equal(allowsUrl(policy, "http://x.svc"), false);
  });

  test("entries that are not understood are refused, naming the entry", () => {
    for (const bad of [[], [" "], ["ftp://x"], ["http://u:p@x"], ["a b"], ["*.*"], ["http://x/?q=1"]]) {
      assert.throws(() => parseUrlPolicy(bad), UrlPolicyError, JSON.stringify(bad));
    }
    assert.throws(() => parseUrlPolicy(["x", "a/b"]), /"a\/b"/);
  });

  test("the policy is decided on the parsed URL: a prefix never matches a host that merely starts like it", () => {
    const policy = parseUrlPolicy(["http://prometheus.svc:9090"]);
    fc.assert(
      fc.property(fc.domain(), (host) => {
        const url = `http://prometheus.svc:9090@${host}/api`;
        return allowsUrl(policy, url) === false;
      }),
    );
  });

  test("serviceNamed reads <name>.<namespace>.svc[.<cluster domain>] and nothing else", () => {
    const table: [string, { name: string; namespace: string } | undefined][] = [
      ["prometheus.monitoring.svc", { name: "prometheus", namespace: "monitoring" }],
      ["prometheus.monitoring.svc.cluster.local", { name: "prometheus", namespace: "monitoring" }],
      ["Prometheus.Monitoring.SVC.", { name: "prometheus", namespace: "monitoring" }],
      ["hooks.team-a.svc.corp.example", { name: "hooks", namespace: "team-a" }],
      ["pod-0.db.team-a.svc.cluster.local", undefined],
      ["hooks.team-a", undefined],
      ["team-a.svc", undefined],
      ["svc", undefined],
      ["hooks..svc", undefined],
      ["-bad.team-a.svc", undefined],
      ["10.0.0.1", undefined],
      ["hooks.team-a.svcx", undefined],
    ];
    for (const [host, expected] of table) assert.deepEqual(serviceNamed(host), expected, host);
  });

  test("judgeUrl: a Service name is checked only when nothing but host suffixes allow it", () => {
    const policy = parseUrlPolicy([
      "*.svc",
      "*.svc.cluster.local",
      "prometheus.monitoring.svc",
      "https://metrics.team-b.svc/api",
      "*.example.com",
      "*.cluster.local",
    ]);
    const table: [string, UrlJudgement][] = [
      ["http://hooks.team-a.svc:8080/x", { kind: "service", service: { name: "hooks", namespace: "team-a" } }],
      ["http://hooks.team-a.svc.cluster.local", { kind: "service", service: { name: "hooks", namespace: "team-a" } }],
      // An exact host or a prefix is the operator's own choice: not checked.
      ["http://prometheus.monitoring.svc:9090", { kind: "allowed" }],
      ["https://metrics.team-b.svc/api/v1/query", { kind: "allowed" }],
      ["https://metrics.team-b.svc/other", { kind: "service", service: { name: "metrics", namespace: "team-b" } }],
      // A suffix that is not about Services, for a host that is not a Service's name.
      ["https://hooks.example.com", { kind: "allowed" }],
      // A suffix not about Services still does not make a Service's name safe.
      ["http://x.y.svc.cluster.local", { kind: "service", service: { name: "x", namespace: "y" } }],
      ["http://pod-0.db.team-a.svc", { kind: "notService", entry: "*.svc" }],
      ["http://team-a.svc", { kind: "notService", entry: "*.svc" }],
      ["http://attacker.example.org", { kind: "outside" }],
      ["ftp://hooks.team-a.svc", { kind: "outside" }],
      ["not a url", { kind: "outside" }],
    ];
    for (const [url, expected] of table) assert.deepEqual(judgeUrl(policy, url), expected, url);
    assert.deepEqual(judgeUrl(parseUrlPolicy(["*"]), "http://hooks.team-a.svc"), { kind: "allowed" });
  });

  test("property: judgeUrl allows (or checks) exactly what allowsUrl allows", () => {
    const entries = fc.constantFrom("*", "*.svc", "*.svc.cluster.local", "*.team-a.svc", "prom.team-a.svc", "*.com");
    const host = fc.oneof(
      fc.domain(),
      fc
        .tuple(fc.stringMatching(/^[a-z][a-z0-9]{0,6}$/), fc.constantFrom("team-a", "b"))
        .map(([n, ns]) => `${n}.${ns}.svc`),
    );
    fc.assert(
      fc.property(fc.uniqueArray(entries, { minLength: 1, maxLength: 3 }), host, (list, h) => {
        const policy = parseUrlPolicy(list);
        const url = `http://${h}/x`;
        assert.equal(judgeUrl(policy, url).kind !== "outside", allowsUrl(policy, url), `${list.join(",")} ${url}`);
        if (list.includes("*")) assert.equal(judgeUrl(policy, url).kind, "allowed");
      }),
    );
  });
});

import assert from "node:assert/strict";
import { describe, test } from "node:test";
import type { CanaryApp } from "../../api/types.js";
import { ServiceNotKnownYet, ServiceVerdicts, type ServiceLookupResult } from "./services.js";
import { UrlPolicyError } from "./url-policy.js";
import { DEFAULT_WEBHOOK_URL_POLICY, renderedWebhookUrl, webhookDestinations } from "./webhook-destinations.js";

function app(namespace = "shop"): CanaryApp {
  return { metadata: { name: "web", namespace }, spec: { image: "web:v1", imageListenPort: 8080 } };
}

/** Verdicts over a fixed set of Services, every lookup already answered. */
async function verdictsOf(services: Record<string, ServiceLookupResult>, names: string[]): Promise<ServiceVerdicts> {
  const verdicts = new ServiceVerdicts({
    lookup: (s) => Promise.resolve(services[`${s.namespace}/${s.name}`] ?? { missing: true }),
    now: () => 0,
  });
  for (const key of names) {
    const [namespace = "", name = ""] = key.split("/");
    await verdicts.current({ namespace, name });
  }
  return verdicts;
}

const SERVICES: Record<string, ServiceLookupResult> = {
  "shop/hooks": { found: { type: "ClusterIP", selector: { app: "hooks" } } },
  "shop/ext": { found: { type: "ExternalName", externalName: "evil.example" } },
  "shop/manual": { found: { type: "ClusterIP" } },
  "other/hooks": { found: { type: "ClusterIP", selector: { app: "hooks" } } },
};
const KNOWN = [...Object.keys(SERVICES), "shop/gone"];

describe("the webhook policy", () => {
  test("by default: the Services of the app's own namespace that select pods, and nothing else", async () => {
    const destinations = webhookDestinations({
      entries: undefined,
      ownPrometheusURL: "http://prometheus.monitoring:9090",
      services: await verdictsOf(SERVICES, KNOWN),
    });
    assert.deepEqual(DEFAULT_WEBHOOK_URL_POLICY, ["*.{namespace}.svc", "*.{namespace}.svc.cluster.local"]);
    const table: [string, RegExp | undefined][] = [
      ["http://hooks.shop.svc/gate", undefined],
      ["http://hooks.shop.svc:8080/gate", undefined],
      ["https://hooks.shop.svc.cluster.local/gate", undefined],
      [
        "http://hooks.other.svc/gate",
        /is outside the controller's webhook URL policy \(\*\.shop\.svc, \*\.shop\.svc\.cluster\.local\)/,
      ],
      ["http://hooks.shop/gate", /is outside/],
      ["http://hooks/gate", /is outside/],
      ["http://ext.shop.svc/gate", /Service shop\/ext is an ExternalName Service/],
      ["http://manual.shop.svc/gate", /Service shop\/manual has no selector/],
      ["http://gone.shop.svc/gate", /Service shop\/gone does not exist/],
      ["http://pod-0.hooks.shop.svc/gate", /only the entry \*\.shop\.svc .* names no Service/],
      ["http://prometheus.monitoring:9090/api/v1/admin/tsdb/snapshot", /the controller's own Prometheus/],
      ["http://169.254.169.254/latest", /is outside/],
      ["http://127.0.0.1:9090/", /is outside/],
    ];
    for (const [url, expected] of table) {
      const refused = destinations.vet(app(), url, `webhook gate (${url})`);
      if (expected === undefined) assert.equal(refused, undefined, url);
      else assert.match(refused ?? "(allowed)", expected, url);
    }
    // The same Service name is the app's own in its namespace only.
    assert.equal(destinations.vet(app("other"), "http://hooks.other.svc/", "w"), undefined);
    assert.match(destinations.vet(app("other"), "http://hooks.shop.svc/", "w") ?? "", /is outside/);
  });

  test("the controller's own Prometheus is refused whatever the policy says; the same host on another port is not", () => {
    const destinations = webhookDestinations({
      entries: ["*"],
      ownPrometheusURL: "http://prometheus.monitoring:9090/",
    });
    assert.match(
      destinations.vet(app(), "http://prometheus.monitoring:9090/-/quit", "webhook q") ?? "",
      /^webhook q is the controller's own Prometheus \(--prometheus-url\), which takes queries, never webhooks/,
    );
    assert.match(destinations.vet(app(), "http://PROMETHEUS.monitoring:9090", "w") ?? "", /own Prometheus/);
    assert.equal(destinations.vet(app(), "http://prometheus.monitoring:9091/hook", "w"), undefined);
    assert.equal(destinations.vet(app(), "https://hooks.slack.com/services/T/B/x", "w"), undefined);
  });

  test("an operator's entries replace the default; {namespace} stands for the app's", async () => {
    const destinations = webhookDestinations({
      entries: ["*.{namespace}.svc", "https://hooks.slack.com/services"],
      ownPrometheusURL: undefined,
      services: await verdictsOf(SERVICES, KNOWN),
    });
    assert.equal(destinations.vet(app(), "https://hooks.slack.com/services/T/B/x", "w"), undefined);
    assert.equal(destinations.vet(app(), "http://hooks.shop.svc/", "w"), undefined);
    assert.match(destinations.vet(app(), "http://hooks.other.svc/", "w") ?? "", /is outside/);
    assert.match(destinations.vet(app(), "https://hooks.slack.com/other", "w") ?? "", /is outside/);
    assert.deepEqual(destinations.policyFor("team-a").entries, ["*.team-a.svc", "https://hooks.slack.com/services"]);
  });

  test("an exact host in the policy is the operator's choice: its Service is not checked", async () => {
    const destinations = webhookDestinations({
      entries: ["ext.shop.svc"],
      ownPrometheusURL: undefined,
      services: await verdictsOf(SERVICES, []),
    });
    assert.equal(destinations.vet(app(), "http://ext.shop.svc/", "w"), undefined);
  });

  test("entries that are not understood stop the controller at start", () => {
    assert.throws(() => webhookDestinations({ entries: ["a b"], ownPrometheusURL: undefined }), UrlPolicyError);
  });

  test("vet throws for a Service never looked up; check looks it up first", async () => {
    const destinations = webhookDestinations({
      entries: undefined,
      ownPrometheusURL: undefined,
      services: await verdictsOf(SERVICES, []),
    });
    assert.throws(() => destinations.vet(app(), "http://hooks.shop.svc/", "w"), ServiceNotKnownYet);
    assert.equal(await destinations.check(app(), "http://hooks.shop.svc/", "w"), undefined);
    assert.match((await destinations.check(app(), "http://ext.shop.svc/", "w")) ?? "", /ExternalName/);
    assert.equal(destinations.vet(app(), "http://hooks.shop.svc/", "w"), undefined);
  });
});

test("renderedWebhookUrl renders {{variables}} as the checks do, and leaves an unknown one as written", () => {
  assert.equal(renderedWebhookUrl(app(), "http://tester.{{namespace}}.svc/{{name}}"), "http://tester.shop.svc/web");
  assert.equal(renderedWebhookUrl(app(), "http://tester.shop.svc/{{nope}}"), "http://tester.shop.svc/{{nope}}");
  assert.equal(renderedWebhookUrl(app(), "http://plain.shop.svc/"), "http://plain.shop.svc/");
});

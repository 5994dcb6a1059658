import assert from "node:assert/strict";
import { describe, test } from "node:test";
import type { CanaryApp } from "../api/types.js";
import { appsUsingSecret, prometheusAccess } from "./access.js";
import { CREDENTIALS_LABEL, prometheusAccessRefusal, type LabelledSecret } from "./credentials.js";
import { controllerUrlPolicy } from "./url-policy.js";

function app(spec: Partial<CanaryApp["spec"]> = {}, namespace = "shop"): CanaryApp {
  return { metadata: { name: "web", namespace }, spec: { image: "web:v1", imageListenPort: 8080, ...spec } };
}

function secret(namespace: string, name: string, labels: Record<string, string> = {}): LabelledSecret {
  return { metadata: { namespace, name, labels } };
}

const policy = controllerUrlPolicy(undefined, "http://prometheus.monitoring:9090");
const IN_POLICY = "http://prometheus.istio-system.svc:9090";

function rules(...secrets: LabelledSecret[]) {
  return {
    policy,
    defaultPrometheusURL: "http://prometheus.monitoring:9090",
    secret: (namespace: string, name: string) =>
      secrets.find((s) => s.metadata?.namespace === namespace && s.metadata.name === name),
  };
}

describe("prometheusAccessRefusal", () => {
  test("an app without a Secret and with an allowed (or default) URL may query", () => {
    assert.equal(prometheusAccessRefusal(app({ prometheusURL: IN_POLICY }), rules()), undefined);
    assert.equal(prometheusAccessRefusal(app(), rules()), undefined);
  });

  test("a URL outside the policy is refused, naming the setting and the policy", () => {
    const refusal = prometheusAccessRefusal(app({ prometheusURL: "http://attacker.example:8080/x?t=1" }), rules());
    assert.equal(refusal?.reason, "PrometheusURLNotAllowed");
    assert.match(refusal?.message ?? "", /^spec\.prometheusURL http:\/\/attacker\.example:8080\/x is outside/);
    assert.match(refusal?.message ?? "", /\*\.svc, \*\.svc\.cluster\.local/);
    assert.match(refusal?.message ?? "", /--prometheus-url-policy/);
  });

  test("a Secret is used only when labelled as credentials (either name), in the app's own namespace", () => {
    assert.equal(CREDENTIALS_LABEL, "canaryapp.io/credentials");
    const labelled = { [CREDENTIALS_LABEL]: "true" };
    const cases: [string, LabelledSecret[], boolean][] = [
      ["labelled, same namespace", [secret("shop", "prom", labelled)], true],
      [
        "labelled with the older name, same namespace",
        [secret("shop", "prom", { "canaryapp.io/prometheus-credentials": "true" })],
        true,
      ],
      ["older name set to false", [secret("shop", "prom", { "canaryapp.io/prometheus-credentials": "false" })], false],
      ["unlabelled (an SA token Secret)", [secret("shop", "prom")], false],
      ["label set to false", [secret("shop", "prom", { [CREDENTIALS_LABEL]: "false" })], false],
      ["labelled, other namespace", [secret("kube-system", "prom", labelled)], false],
      ["missing", [], false],
    ];
    for (const [what, secrets, usable] of cases) {
      const reader = rules(...secrets);
      // A reader that hands back a Secret of another namespace is not trusted either.
      const refusal = prometheusAccessRefusal(
        app({ prometheusURL: IN_POLICY, prometheus: { secretRef: { name: "prom" } } }),
        {
          ...reader,
          secret: (_ns, name) => secrets.find((s) => s.metadata?.name === name),
        },
      );
      assert.equal(refusal === undefined, usable, what);
      if (!usable) {
        assert.equal(refusal?.reason, "CredentialsRefused", what);
        assert.match(
          refusal?.message ?? "",
          /^spec\.prometheus\.secretRef prom: .*canaryapp\.io\/credentials=true \(nor its older name canaryapp\.io\/prometheus-credentials=true\)/,
        );
        assert.match(refusal?.message ?? "", /nothing was sent/);
      }
    }
  });

  test("the URL is judged before the Secret: an attacker's URL is refused whatever the Secret", () => {
    const refusal = prometheusAccessRefusal(
      app({ prometheusURL: "http://10.0.0.1:8080", prometheus: { secretRef: { name: "prom" } } }),
      rules(secret("shop", "prom", { [CREDENTIALS_LABEL]: "true" })),
    );
    assert.equal(refusal?.reason, "PrometheusURLNotAllowed");
  });
});

describe("prometheusAccess", () => {
  const b64 = (s: string) => Buffer.from(s).toString("base64");
  const store = [
    { ...secret("shop", "good", { [CREDENTIALS_LABEL]: "true" }), data: { token: b64("t0k3n") } },
    { ...secret("shop", "bad"), data: { token: b64("stolen") } },
  ];
  const access = prometheusAccess({
    policyEntries: undefined,
    defaultPrometheusURL: undefined,
    secrets: { get: (ns, name) => store.find((s) => s.metadata?.namespace === ns && s.metadata.name === name) },
  });

  test("the reader hands out a labelled Secret's data and nothing for any other", async () => {
    assert.deepEqual(await access.readSecret("shop", "good"), { data: { token: b64("t0k3n") } });
    assert.equal(await access.readSecret("shop", "bad"), null);
    assert.equal(await access.readSecret("other", "good"), null);
  });

  test("redirects are judged by the same policy", () => {
    assert.equal(access.allowRedirect(new URL("http://p.monitoring.svc/x")), true);
    assert.equal(access.allowRedirect(new URL("http://example.com/x")), false);
  });

  test("appsUsingSecret names the apps of the Secret's namespace that refer to it", () => {
    const apps = [
      app({ prometheus: { secretRef: { name: "good" } } }),
      { ...app({ prometheus: { secretRef: { name: "good" } } }, "other") },
      { ...app({}), metadata: { name: "plain", namespace: "shop" } },
    ];
    assert.deepEqual(appsUsingSecret(apps, secret("shop", "good")), ["shop/web"]);
  });
});

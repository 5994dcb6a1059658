import assert from "node:assert/strict";
import { describe, test } from "node:test";
import type { CanaryApp } from "../../api/types.js";
import fc from "fast-check";
import { appsUsingSecret, prometheusAccess } from "./prometheus/access.js";
import {
  ALLOWED_URLS_ANNOTATION,
  CREDENTIALS_LABEL,
  credentialRefusal,
  prometheusAccessRefusal,
  type LabelledSecret,
} from "./credentials.js";
import { ServiceNotKnownYet, ServiceVerdicts, type ServiceLookupResult } from "./services.js";
import { controllerUrlPolicy } from "./url-policy.js";

function app(spec: Partial<CanaryApp["spec"]> = {}, namespace = "shop"): CanaryApp {
  return { metadata: { name: "web", namespace }, spec: { image: "web:v1", imageListenPort: 8080, ...spec } };
}

const IN_POLICY = "http://prometheus.istio-system.svc:9090";

/** A Secret; by default made for IN_POLICY (its allowed-urls annotation). */
function secret(
  namespace: string,
  name: string,
  labels: Record<string, string> = {},
  annotations: Record<string, string> = { [ALLOWED_URLS_ANNOTATION]: IN_POLICY },
): LabelledSecret {
  return { metadata: { namespace, name, labels, annotations } };
}

const policy = controllerUrlPolicy(undefined, "http://prometheus.monitoring:9090");

function rules(...secrets: LabelledSecret[]) {
  return {
    policy,
    defaultPrometheusURL: "http://prometheus.monitoring:9090",
    secret: (namespace: string, name: string) =>
      secrets.find((s) => s.metadata?.namespace === namespace && s.metadata.name === name),
    allowPlainHttpCredentials: true,
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

describe("credentialRefusal: a Secret's contents go only where its annotation says", () => {
  const destination = (allowedUrls: string | undefined, allowPlainHttp = false) => ({
    secret: { name: "prom", namespace: "shop" },
    allowedUrls,
    allowPlainHttp,
  });
  const refusal = (allowedUrls: string | undefined, url: string, allowPlainHttp = false) =>
    credentialRefusal(destination(allowedUrls, allowPlainHttp), url, `spec.prometheusURL ${url}`);

  test("a table of annotations and URLs", () => {
    const prefix = "https://metrics.example.com/team-a";
    const table: [string | undefined, string, boolean, RegExp | undefined][] = [
      // [allowed-urls, URL, plain http allowed, refusal (undefined: sent)]
      [prefix, "https://metrics.example.com/team-a", false, undefined],
      [prefix, "https://metrics.example.com/team-a/api/v1/query", false, undefined],
      [prefix, "https://metrics.example.com:443/team-a", false, undefined],
      [`${prefix}/`, "https://metrics.example.com/team-a", false, undefined],
      [`https://other.example, ${prefix}`, "https://metrics.example.com/team-a/x", false, undefined],
      [prefix, "https://metrics.example.com/team-ab", false, /is not where the Secret may be sent/],
      [prefix, "https://metrics.example.com/team-a/../admin", false, /is not where the Secret may be sent/],
      [prefix, "https://metrics.example.com/team-a/%2e%2e/admin", false, /is not where the Secret may be sent/],
      [prefix, "https://metrics.example.com:8443/team-a", false, /is not where the Secret may be sent/],
      [prefix, "https://metrics.example.com.evil.io/team-a", false, /is not where the Secret may be sent/],
      [prefix, "http://metrics.example.com/team-a", true, /is not where the Secret may be sent/],
      [prefix, "http://catcher.tenant.svc/team-a", true, /is not where the Secret may be sent/],
      ["http://prom.monitoring.svc:9090", "http://prom.monitoring.svc:9090", false, /not sent over plain http/],
      ["http://prom.monitoring.svc:9090", "http://prom.monitoring.svc:9090/api", true, undefined],
      [undefined, "https://metrics.example.com", false, /has no annotation canaryapp\.io\/allowed-urls/],
      ["", "https://metrics.example.com", false, /has no annotation/],
      [" , ", "https://metrics.example.com", false, /has no annotation/],
      ["*", "https://metrics.example.com", false, /is not a list of URL prefixes/],
      ["metrics.example.com", "https://metrics.example.com", false, /is not a list of URL prefixes/],
      ["*.example.com", "https://metrics.example.com", false, /is not a list of URL prefixes/],
      ["https://u:p@metrics.example.com", "https://metrics.example.com", false, /is not a list of URL prefixes/],
    ];
    for (const [allowed, url, plain, expected] of table) {
      const refused = refusal(allowed, url, plain);
      const what = `${allowed ?? "(none)"} → ${url}${plain ? " (plain http allowed)" : ""}`;
      if (expected === undefined) assert.equal(refused, undefined, what);
      else assert.match(refused ?? "(sent)", expected, what);
    }
  });

  test("the refusal of an unannotated Secret says how to annotate it, and never suggests the URL asked for", () => {
    const refused = refusal(undefined, "http://catcher.tenant.svc") ?? "";
    assert.match(
      refused,
      /kubectl annotate secret prom -n shop canaryapp\.io\/allowed-urls=https:\/\/HOST\[:PORT\]\[\/PATH\]$/,
    );
    assert.doesNotMatch(refused, /catcher/);
  });

  test("property: a URL at or below a prefix is allowed; one on another origin never is", () => {
    const label = fc.stringMatching(/^[a-z][a-z0-9-]{0,10}[a-z0-9]$/);
    const segment = fc.stringMatching(/^[a-zA-Z0-9_-]{1,12}$/);
    fc.assert(
      fc.property(
        fc.tuple(label, label),
        fc.array(segment, { maxLength: 3 }),
        fc.array(segment, { maxLength: 3 }),
        fc.tuple(label, label),
        fc.constantFrom("", ":8443"),
        ([a, b], base, below, [c, d], port) => {
          const origin = `https://${a}.${b}.example`;
          const prefix = `${origin}/${base.join("/")}`;
          const url = `${origin}/${[...base, ...below].join("/")}`;
          assert.equal(refusal(prefix, url), undefined, `${prefix} → ${url}`);
          const elsewhere = `https://${c}.${d}.example${port}/${[...base, ...below].join("/")}`;
          if (new URL(elsewhere).origin !== new URL(origin).origin) {
            assert.match(refusal(prefix, elsewhere) ?? "", /is not where the Secret may be sent/);
          }
        },
      ),
    );
  });
});

describe("prometheusAccessRefusal with destinations and Services", () => {
  const labelled = { [CREDENTIALS_LABEL]: "true" };
  const withSecret = (annotations: Record<string, string>, url: string) =>
    prometheusAccessRefusal(app({ prometheusURL: url, prometheus: { secretRef: { name: "prom" } } }), {
      ...rules(secret("shop", "prom", labelled, annotations)),
      allowPlainHttpCredentials: false,
    });

  test("a labelled Secret made for another Prometheus is not sent to the app's URL", () => {
    const refusal = withSecret(
      { [ALLOWED_URLS_ANNOTATION]: "https://prom.monitoring.svc" },
      "http://catcher.shop.svc:80",
    );
    assert.equal(refusal?.reason, "CredentialsRefused");
    assert.equal(
      refusal?.message,
      "spec.prometheus.secretRef prom: spec.prometheusURL http://catcher.shop.svc is not where the Secret may be " +
        "sent (canaryapp.io/allowed-urls: https://prom.monitoring.svc); nothing was sent",
    );
  });

  test("a labelled Secret without the annotation is refused (the older label too)", () => {
    for (const label of [CREDENTIALS_LABEL, "canaryapp.io/prometheus-credentials"]) {
      const refusal = prometheusAccessRefusal(
        app({ prometheusURL: "https://prom.monitoring.svc", prometheus: { secretRef: { name: "prom" } } }),
        rules(secret("shop", "prom", { [label]: "true" }, {})),
      );
      assert.equal(refusal?.reason, "CredentialsRefused", label);
      assert.match(refusal?.message ?? "", /^spec\.prometheus\.secretRef prom: the Secret has no annotation/);
    }
  });

  test("https to an annotated prefix is allowed; plain http only with the operator's flag", () => {
    const annotation = { [ALLOWED_URLS_ANNOTATION]: "https://prom.monitoring.svc, http://prom.monitoring.svc:9090" };
    assert.equal(withSecret(annotation, "https://prom.monitoring.svc/api"), undefined);
    assert.match(withSecret(annotation, "http://prom.monitoring.svc:9090")?.message ?? "", /plain http/);
  });

  test("a URL allowed only as a Service's name is refused with the Service's verdict, before the Secret", () => {
    const verdicts: Record<string, string | undefined> = {
      "shop/ext": "is an ExternalName Service: its name resolves to evil.example, wherever that is",
      "shop/ok": undefined,
    };
    const asked: string[] = [];
    const judged = (url: string) =>
      prometheusAccessRefusal(app({ prometheusURL: url, prometheus: { secretRef: { name: "prom" } } }), {
        ...rules(secret("shop", "prom", labelled, { [ALLOWED_URLS_ANNOTATION]: url })),
        service: (s) => {
          asked.push(`${s.namespace}/${s.name}`);
          return verdicts[`${s.namespace}/${s.name}`];
        },
      });
    const refusal = judged("http://ext.shop.svc:9090");
    assert.equal(refusal?.reason, "PrometheusURLNotAllowed");
    assert.match(
      refusal?.message ?? "",
      /^spec\.prometheusURL http:\/\/ext\.shop\.svc:9090: Service shop\/ext is an ExternalName Service.*--prometheus-url-policy/,
    );
    assert.equal(judged("http://ok.shop.svc.cluster.local:9090"), undefined);
    // The controller's own Prometheus (a prefix entry) is the operator's choice: not checked.
    assert.equal(judged("http://prometheus.monitoring:9090"), undefined);
    assert.deepEqual(asked, ["shop/ext", "shop/ok"]);
  });

  test("a host only a *.svc entry takes that names no Service is refused", () => {
    const refusal = prometheusAccessRefusal(app({ prometheusURL: "http://pod-0.db.shop.svc:9090" }), {
      ...rules(),
      service: () => undefined,
    });
    assert.equal(refusal?.reason, "PrometheusURLNotAllowed");
    assert.match(refusal?.message ?? "", /only the entry \*\.svc .* names no Service/);
  });
});

describe("prometheusAccess", () => {
  const b64 = (s: string) => Buffer.from(s).toString("base64");
  const store = [
    { ...secret("shop", "good", { [CREDENTIALS_LABEL]: "true" }, {}), data: { token: b64("t0k3n") } },
    { ...secret("shop", "bad", {}, {}), data: { token: b64("stolen") } },
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

  test("the reader hands out the Secret's allowed-urls with its data", async () => {
    const annotated = prometheusAccess({
      policyEntries: undefined,
      defaultPrometheusURL: undefined,
      secrets: {
        get: () => ({
          ...secret(
            "shop",
            "good",
            { [CREDENTIALS_LABEL]: "true" },
            { [ALLOWED_URLS_ANNOTATION]: "https://p", x: "y" },
          ),
          data: { token: b64("t") },
        }),
      },
    });
    assert.deepEqual(await annotated.readSecret("shop", "good"), {
      data: { token: b64("t") },
      metadata: { annotations: { [ALLOWED_URLS_ANNOTATION]: "https://p" } },
    });
  });

  test("with Services checked: the vet waits for a first verdict, the check reads a fresh one", async () => {
    const results: Record<string, ServiceLookupResult> = {
      "monitoring/prom": { found: { type: "ClusterIP", selector: { app: "prometheus" } } },
      "shop/ext": { found: { type: "ExternalName", externalName: "evil.example" } },
    };
    let lookups = 0;
    const requeued: string[] = [];
    const services = new ServiceVerdicts({
      lookup: (s) => {
        lookups++;
        return Promise.resolve(results[`${s.namespace}/${s.name}`] ?? { missing: true });
      },
      now: () => 0,
      changed: (keys) => requeued.push(...keys),
    });
    const checked = prometheusAccess({
      policyEntries: undefined,
      defaultPrometheusURL: undefined,
      secrets: { get: () => undefined },
      services,
    });
    const good = app({ prometheusURL: "http://prom.monitoring.svc:9090" });
    const bad = app({ prometheusURL: "http://ext.shop.svc:9090" }, "shop");
    assert.throws(() => checked.vet(good), ServiceNotKnownYet);
    assert.equal(await checked.check(good), undefined);
    assert.equal(checked.vet(good), undefined);
    assert.equal((await checked.check(bad))?.reason, "PrometheusURLNotAllowed");
    assert.equal(lookups, 2, "one lookup a Service while its verdict is fresh");
    assert.deepEqual(requeued, ["shop/web", "shop/web"], "the app that asked is judged again once it is known");
    assert.equal(checked.allowRedirect(new URL("http://prom.monitoring.svc:9090/x")), true);
    assert.equal(checked.allowRedirect(new URL("http://ext.shop.svc:9090/x")), false);
    assert.equal(checked.allowRedirect(new URL("http://never-seen.shop.svc/x")), false, "not known: not followed");
  });

  test("credentialsMayGo judges a Secret's annotation for a URL (and so every redirect)", () => {
    const mayGo = (allowedUrls: string | undefined, url: string) =>
      access.credentialsMayGo({ name: "prom", namespace: "shop", allowedUrls }, url);
    assert.equal(mayGo("https://prom.example.com/a", "https://prom.example.com/a/api/v1/query"), undefined);
    assert.match(mayGo("https://prom.example.com/a", "https://prom.example.com/b") ?? "", /not where/);
    assert.match(mayGo(undefined, "https://prom.example.com/a") ?? "", /has no annotation/);
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

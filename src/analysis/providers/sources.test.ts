/**
 * The metric sources under the controller's own rules (prometheus/access.ts), as the wiring builds them: the
 * URL policy judges a source's address, the label-filtered cache gives its Secret, and the Secret's
 * `canaryapp.io/allowed-urls` binds it, exactly as for the app's Prometheus.
 */
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { ALLOWED_URLS_ANNOTATION, CREDENTIALS_LABEL, type LabelledSecret, type SecretData } from "./credentials.js";
import { app, checkOf, startFakeSource, type FakeSource } from "./fake-source.test-helpers.js";
import { prometheusAccess } from "./prometheus/access.js";
import { metricSources, sourceAccessOf } from "./sources.js";

function secret(
  name: string,
  values: Record<string, string>,
  allowedUrls: string,
  labelled = true,
): LabelledSecret & SecretData {
  return {
    metadata: {
      namespace: "team-a",
      name,
      labels: labelled ? { [CREDENTIALS_LABEL]: "true" } : {},
      annotations: { [ALLOWED_URLS_ANNOTATION]: allowedUrls },
    },
    data: Object.fromEntries(Object.entries(values).map(([k, v]) => [k, Buffer.from(v).toString("base64")])),
  };
}

describe("metric sources under the controller's Prometheus rules", () => {
  let server: FakeSource;
  before(async () => {
    server = await startFakeSource(() => ({ body: [{ target: "x", datapoints: [[4, 1]] }] }));
  });
  after(() => server.close());

  const sources = (policyEntries: string[] | undefined, secrets: (LabelledSecret & SecretData)[]) =>
    metricSources(
      sourceAccessOf(
        prometheusAccess({
          policyEntries,
          defaultPrometheusURL: undefined,
          secrets: { get: (ns, name) => secrets.find((s) => s.metadata?.namespace === ns && s.metadata.name === name) },
          allowPlainHttpCredentials: true,
        }),
      ),
    );

  test("a SaaS default address outside the policy is refused, naming provider.address and the flag", async () => {
    const dd = secret("dd", { apiKey: "k", applicationKey: "a" }, "https://api.datadoghq.com");
    const [outcome] = await sources(undefined, [dd]).datadog!.run(app, [
      checkOf("avg:x{*}", { type: "datadog", secretRef: { name: "dd" } }),
    ]);
    const message = outcome?.kind === "error" ? outcome.message : "";
    assert.match(
      message,
      /provider\.address https:\/\/api\.datadoghq\.com is outside the controller's Prometheus URL policy/,
    );
    assert.ok(!message.includes("spec.prometheusURL"));
  });

  test("an address the policy allows, with a labelled Secret bound to it, is queried with its credentials", async () => {
    const g = secret("g", { username: "u", password: "p" }, server.url);
    const [outcome] = await sources([server.url], [g]).graphite!.run(app, [
      checkOf("x", { type: "graphite", address: server.url, secretRef: { name: "g" } }),
    ]);
    assert.deepEqual(outcome, { kind: "value", value: 4 });
    assert.equal(server.requests.at(-1)?.headers.authorization, `Basic ${Buffer.from("u:p").toString("base64")}`);
  });

  test("a Secret without the credentials label is not read, and nothing is sent", async () => {
    const g = secret("g", { username: "u", password: "p" }, server.url, false);
    const before = server.requests.length;
    const [outcome] = await sources([server.url], [g]).graphite!.run(app, [
      checkOf("x", { type: "graphite", address: server.url, secretRef: { name: "g" } }),
    ]);
    assert.match(outcome?.kind === "error" ? outcome.message : "", /without the label canaryapp\.io\/credentials=true/);
    assert.equal(server.requests.length, before);
  });
});

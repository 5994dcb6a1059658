/**
 * The CanaryApp API as the API server enforces it: the seed manifest is accepted unchanged apart from its
 * apiVersion and gets its defaults; invalid specs are rejected with a message a user understands.
 */
import assert from "node:assert/strict";
import { before, describe, test } from "node:test";
import type { CanaryAnalysisTemplateSpec, CanaryApp } from "../../src/api/types.js";
import {
  analysisTemplates,
  canaryApps,
  createTestNamespace,
  rejectionMessage,
  testKubeConfig,
} from "../support/kube.js";
import { SEED_SPEC } from "../../src/resources/fixtures.test-helpers.js";
import { DEFAULTS } from "../../src/api/defaults.js";

const seedSpec = SEED_SPEC;

type Spec = Record<string, unknown>;
const invalid: { name: string; spec: Spec; metadataName?: string; message: RegExp }[] = [
  {
    name: "a webhook URL that is not http(s)",
    spec: { ...seedSpec, analysis: { webhooks: [{ name: "gate", type: "confirm-promotion", url: "ftp://x.svc/" }] } },
    message: /a webhook's url must be an http\(s\) URL/,
  },
  {
    name: "a webhook of an unknown type",
    spec: { ...seedSpec, analysis: { webhooks: [{ name: "gate", type: "sometimes", url: "http://x.svc/" }] } },
    message: /webhooks\[0\]\.type: Unsupported value: "sometimes"/,
  },
  {
    name: "a notification without its Secret",
    spec: { ...seedSpec, notifications: [{ type: "slack" }] },
    message: /notifications\[0\]\.secretRef: Required value/,
  },
  { name: "no image", spec: { ...seedSpec, image: undefined }, message: /spec\.image: Required value/ },
  {
    name: "not an image reference",
    spec: { ...seedSpec, image: "Not An Image!" },
    message: /image must be a container image reference/,
  },
  {
    name: "no request at all as the evidence",
    spec: { ...seedSpec, analysis: { minRequests: 0 } },
    message: /analysis\.minRequests in body should be greater than or equal to 1/,
  },
  {
    name: "a comparison that fails a secondary faster than the primary",
    spec: { ...seedSpec, analysis: { compare: { latencyRatioMax: 0.5 } } },
    message: /compare\.latencyRatioMax in body should be greater than or equal to 1/,
  },
  {
    name: "port 0",
    spec: { ...seedSpec, imageListenPort: 0 },
    message: /imageListenPort: Invalid value: 0: spec\.imageListenPort in body should be greater than or equal to 1/,
  },
  {
    name: "port above 65535",
    spec: { ...seedSpec, imageListenPort: 70000 },
    message: /imageListenPort.*less than or equal to 65535/,
  },
  {
    name: "testReplicas above replicas",
    spec: { ...seedSpec, replicas: 1, testReplicas: 2 },
    message: /testReplicas must not be greater than replicas/,
  },
  { name: "negative replicas", spec: { ...seedSpec, replicas: -1 }, message: /replicas.*greater than or equal to 1/ },
  {
    name: "ftp Prometheus URL",
    spec: { ...seedSpec, prometheusURL: "ftp://prometheus:9090" },
    message: /prometheusURL must be an http\(s\) URL/,
  },
  {
    name: "Prometheus URL that is no URL",
    spec: { ...seedSpec, prometheusURL: "prometheus 9090" },
    message: /prometheusURL must be an http\(s\) URL/,
  },
  {
    name: "stepWeight above maxWeight",
    spec: { ...seedSpec, analysis: { stepWeight: 60, maxWeight: 50 } },
    message: /stepWeight must not be greater than analysis\.maxWeight/,
  },
  {
    name: "interval in words",
    spec: { ...seedSpec, analysis: { interval: "30 seconds" } },
    message: /interval must be a duration between 1s and 24h/,
  },
  {
    name: "interval too short",
    spec: { ...seedSpec, analysis: { interval: "100ms" } },
    message: /interval must be a duration between 1s and 24h/,
  },
  {
    name: "weights not increasing",
    spec: { ...seedSpec, analysis: { stepWeights: [30, 20, 40] } },
    message: /stepWeights must be strictly increasing/,
  },
  {
    name: "weight above 100",
    spec: { ...seedSpec, analysis: { stepWeights: [50, 101] } },
    message: /stepWeights\[1\].*less than or equal to 100/,
  },
  {
    name: "metric without query",
    spec: { ...seedSpec, analysis: { metrics: [{ name: "latency", max: 5 }] } },
    message: /a metric needs a query unless its name is a built-in/,
  },
  {
    name: "metric without bounds",
    spec: { ...seedSpec, analysis: { metrics: [{ name: "request-success-rate" }] } },
    message: /a metric needs min, max or both, or a judge/,
  },
  {
    name: "metric min above max",
    spec: { ...seedSpec, analysis: { metrics: [{ name: "request-duration", min: 9, max: 1 }] } },
    message: /min must not be greater than its max/,
  },
  {
    name: "threshold 0",
    spec: { ...seedSpec, analysis: { threshold: 0 } },
    message: /threshold.*greater than or equal to 1/,
  },
  {
    name: "pod label the controller owns",
    spec: { ...seedSpec, pod: { labels: { "canaryapp.io/track": "primary" } } },
    message: /pod\.labels must not set canaryapp\.io/,
  },
  {
    name: "env with value and valueFrom",
    spec: {
      ...seedSpec,
      pod: { env: [{ name: "A", value: "1", valueFrom: { secretKeyRef: { name: "s", key: "k" } } }] },
    },
    message: /takes value or valueFrom, not both/,
  },
  {
    name: "unknown phase in a typo'd field type",
    spec: { ...seedSpec, replicas: "two" },
    message: /spec\.replicas: Invalid value: "string": spec\.replicas in body must be of type integer/,
  },
  {
    name: "batches without their count",
    spec: { ...seedSpec, replicas: 4, strategy: { type: "batches" } },
    message: /strategy\.batches is required with type: batches, and only then/,
  },
  {
    name: "batches given with type steps",
    spec: { ...seedSpec, replicas: 4, strategy: { type: "steps", batches: { count: 2 } } },
    message: /strategy\.batches is required with type: batches, and only then/,
  },
  {
    name: "more batches than replicas",
    spec: { ...seedSpec, replicas: 2, strategy: { type: "batches", batches: { count: 3 } } },
    message: /strategy\.batches\.count must not be greater than replicas/,
  },
  {
    name: "zero batches",
    spec: { ...seedSpec, replicas: 2, strategy: { type: "batches", batches: { count: 0 } } },
    message: /count.*greater than or equal to 1/,
  },
  {
    name: "an unknown pause type",
    spec: { ...seedSpec, replicas: 2, strategy: { type: "batches", batches: { count: 2, pause: "sometimes" } } },
    message: /pause: Unsupported value: "sometimes"/,
  },
  {
    name: "an A/B phase without a mesh",
    spec: {
      ...seedSpec,
      replicas: 4,
      mesh: "none",
      strategy: { type: "batches", batches: { count: 2 } },
      analysis: { requireTraffic: false, match: { rules: [{ headers: { "x-canary": { exact: "on" } } }] } },
    },
    message: /analysis\.mirror and analysis\.match route by a mesh/,
  },
  {
    name: "a mirror phase in a batch release",
    spec: {
      ...seedSpec,
      replicas: 4,
      strategy: { type: "batches", batches: { count: 2 } },
      analysis: { mirror: { percent: 20 } },
    },
    message:
      /analysis\.mirror and analysis\.match route by a mesh \(spec\.mesh istio or gateway-api\) and step by weight/,
  },
  {
    name: "no weighted steps and no phase",
    spec: { ...seedSpec, analysis: { weighted: false } },
    message: /analysis\.weighted: false needs a mirror or match phase/,
  },
  {
    name: "a mirror of more than all the traffic",
    spec: { ...seedSpec, analysis: { mirror: { percent: 101 } } },
    message: /mirror\.percent in body should be less than or equal to 100/,
  },
  {
    name: "a header condition with both exact and regex",
    spec: { ...seedSpec, analysis: { match: { rules: [{ headers: { "x-canary": { exact: "a", regex: "b" } } }] } } },
    message: /a header condition is exactly one of exact or regex/,
  },
  {
    name: "a match rule without a condition",
    spec: { ...seedSpec, analysis: { match: { rules: [{}] } } },
    message: /a match rule needs headers or a cookie/,
  },
  {
    name: "a header name that is not an HTTP token",
    spec: { ...seedSpec, analysis: { match: { rules: [{ headers: { "x canary": { exact: "a" } } }] } } },
    message: /a header name is an HTTP token/,
  },
  {
    name: "the cookie header matched twice",
    spec: {
      ...seedSpec,
      analysis: {
        match: { rules: [{ cookie: { name: "canary", value: "always" }, headers: { Cookie: { regex: "x" } } }] },
      },
    },
    message: /either by cookie or by headers\.cookie, not both/,
  },
  {
    name: "a cookie value with a separator",
    spec: { ...seedSpec, analysis: { match: { rules: [{ cookie: { name: "canary", value: "a;b" } }] } } },
    message: /cookie\.value in body should match/,
  },
  {
    name: "mesh none with traffic steps",
    spec: { ...seedSpec, mesh: "none" },
    message: /mesh: none needs strategy\.type: batches/,
  },
  {
    name: "mesh none without an evidence source",
    spec: { ...seedSpec, replicas: 4, mesh: "none", strategy: { type: "batches", batches: { count: 2 } } },
    message:
      /mesh: none has no mesh telemetry .* give analysis\.trafficQuery, or opt out with analysis\.requireTraffic: false/,
  },
  {
    name: "batches with an autoscaler",
    spec: {
      ...seedSpec,
      replicas: 4,
      autoscalerRef: { name: "hpa" },
      strategy: { type: "batches", batches: { count: 2 } },
    },
    message: /cannot be combined with autoscalerRef or scaling: weighted/,
  },
  {
    name: "batches of a StatefulSet",
    spec: {
      ...seedSpec,
      replicas: 4,
      workload: { kind: "StatefulSet" },
      strategy: { type: "batches", batches: { count: 2 } },
    },
    message: /strategy\.type: batches releases a Deployment/,
  },
  {
    name: "batches with weighted scaling",
    spec: { ...seedSpec, replicas: 4, scaling: "weighted", strategy: { type: "batches", batches: { count: 2 } } },
    message: /cannot be combined with autoscalerRef or scaling: weighted/,
  },
  {
    name: "name too long for its children",
    metadataName: "a".repeat(53),
    spec: { ...seedSpec },
    message: /at most 52 characters/,
  },
  {
    name: "a StatefulSet sized by an autoscaler",
    spec: { ...seedSpec, replicas: 3, workload: { kind: "StatefulSet" }, autoscalerRef: { name: "hpa" } },
    message: /a StatefulSet workload is not sized by an autoscaler/,
  },
  {
    name: "a StatefulSet with weighted scaling",
    spec: { ...seedSpec, replicas: 3, workload: { kind: "StatefulSet" }, scaling: "weighted" },
    message: /a StatefulSet workload runs testReplicas canary pods: scaling must be fixed/,
  },
  {
    name: "a StatefulSet whose test would take every ordinal",
    spec: { ...seedSpec, replicas: 2, testReplicas: 2, workload: { kind: "StatefulSet" } },
    message: /a StatefulSet workload needs more replicas than testReplicas/,
  },
  {
    name: "StatefulSet fields on a Deployment",
    spec: { ...seedSpec, workload: { kind: "Deployment", serviceName: "db" } },
    message: /serviceName, volumeClaimTemplates and podManagementPolicy are StatefulSet fields/,
  },
  {
    name: "a workload of an unknown kind",
    spec: { ...seedSpec, workload: { kind: "DaemonSet" } },
    message: /workload\.kind: Unsupported value: "DaemonSet"/,
  },
  {
    name: "a claim template without a size",
    spec: {
      ...seedSpec,
      replicas: 3,
      workload: { kind: "StatefulSet", volumeClaimTemplates: [{ name: "data", mountPath: "/data" }] },
    },
    message: /volumeClaimTemplates\[0\]\.storage: Required value/,
  },
  {
    name: "a claim template mounted at a relative path",
    spec: {
      ...seedSpec,
      replicas: 3,
      workload: {
        kind: "StatefulSet",
        volumeClaimTemplates: [{ name: "data", mountPath: "data", storage: "1Gi" }],
      },
    },
    message: /volumeClaimTemplates\[0\]\.mountPath in body should match/,
  },
];

const metric = { name: "errors", query: "sum(up)", max: 1 };
const invalidApps: { name: string; analysis: Record<string, unknown>; message: RegExp }[] = [
  {
    name: "a metric with both a judge and a max",
    analysis: { metrics: [{ ...metric, judge: {} }] },
    message: /a metric is judged either by min\/max or by judge, not both/,
  },
  {
    name: "a metric of weight 0",
    analysis: { metrics: [{ ...metric, weight: 0 }] },
    message: /a metric's weight must be greater than 0/,
  },
  {
    name: "a provider of an unknown type",
    analysis: { metrics: [{ ...metric, provider: { type: "splunk" } }] },
    message: /provider\.type: Unsupported value: "splunk"/,
  },
  {
    name: "a metric interval in words",
    analysis: { metrics: [{ ...metric, judge: {}, max: undefined, interval: "ten seconds" }] },
    message: /a metric's interval must be a duration between 1s and 24h/,
  },
  {
    name: "a score whose pass is below its marginal",
    analysis: { score: { pass: 50, marginal: 75 } },
    message: /score\.pass must not be lower than score\.marginal/,
  },
  {
    name: "a score above 100",
    analysis: { score: { pass: 101 } },
    message: /score\.pass in body should be less than or equal to 100/,
  },
  {
    name: "a template of an unknown kind",
    analysis: { templates: [{ name: "slo", kind: "Template" }] },
    message: /templates\[0\]\.kind: Unsupported value: "Template"/,
  },
  {
    name: "the same template twice",
    analysis: { templates: [{ name: "slo" }, { name: "slo", kind: "CanaryAnalysisTemplate" }] },
    message: /templates\[1\]: Duplicate value/,
  },
  {
    name: "a template arg that is not an identifier",
    analysis: { templates: [{ name: "slo", args: [{ name: "max-rate", value: "1" }] }] },
    message: /an arg's name is an identifier/,
  },
];

for (const bad of invalidApps) {
  invalid.push({ name: bad.name, spec: { ...seedSpec, analysis: bad.analysis }, message: bad.message });
}

describe("CanaryApp API validation", () => {
  const kc = testKubeConfig();
  let apps: ReturnType<typeof canaryApps>;

  before(async () => {
    apps = canaryApps(kc, await createTestNamespace(kc, "crd"));
  });

  test("the seed manifest is accepted unchanged apart from apiVersion, and gets the schema's defaults", async () => {
    const created = await apps.create({ metadata: { name: "canaryapp-sample" }, spec: seedSpec });
    assert.deepEqual(
      {
        ...created.spec,
        analysis: undefined,
        service: undefined,
        drainSeconds: undefined,
        scaling: undefined,
        mesh: undefined,
      },
      {
        ...seedSpec,
        analysis: undefined,
        service: undefined,
        drainSeconds: undefined,
        scaling: undefined,
        mesh: undefined,
      },
    );
    assert.equal(created.spec.mesh, DEFAULTS.mesh);
    assert.equal(created.spec.strategy, undefined, "steps, the behaviour without a strategy");
    assert.equal(created.spec.drainSeconds, DEFAULTS.drainSeconds);
    assert.equal(created.spec.scaling, DEFAULTS.scaling);
    // The schema's defaults and the controller's (src/api/defaults.ts) must be the same values.
    const { interval, stepWeight, maxWeight, threshold, progressDeadlineSeconds } = DEFAULTS;
    const { failWhenPrometheusFails, manualPromotion } = DEFAULTS;
    const { requireTraffic, minRequests, inconclusiveLimit } = DEFAULTS;
    assert.deepEqual(created.spec.analysis, {
      ...{ interval, stepWeight, maxWeight, threshold, progressDeadlineSeconds },
      ...{ failWhenPrometheusFails, manualPromotion },
      ...{ requireTraffic, minRequests, inconclusiveLimit },
    });
    assert.deepEqual(created.spec.service, { port: DEFAULTS.servicePort });
    assert.equal(created.spec.replicas, seedSpec.replicas);
  });

  test("a full spec with every optional section is accepted", async () => {
    await apps.create({
      metadata: { name: "full" },
      spec: {
        ...seedSpec,
        image: "registry.example.com:5000/team/app:v2@sha256:" + "a".repeat(64),
        prometheus: { timeoutSeconds: 10, secretRef: { name: "prom-auth" } },
        analysis: {
          interval: "1m30s",
          stepWeights: [5, 25, 50, 100],
          threshold: 3,
          manualPromotion: true,
          metrics: [
            { name: "request-success-rate", min: 99 },
            { name: "request-duration", max: 500 },
            { name: "queue-depth", query: 'max(queue_depth{app="{{name}}"})', max: 100 },
          ],
        },
        service: { port: 8080, hosts: ["app.example.com"], gateways: ["istio-system/public"] },
        pod: {
          labels: { team: "payments" },
          annotations: { "sidecar.istio.io/inject": "true" },
          env: [{ name: "MODE", value: "fast" }],
          resources: { requests: { cpu: "100m", memory: "64Mi" }, limits: { memory: "128Mi" } },
          readinessProbe: { httpGet: { path: "/healthz", port: 8088 } },
        },
      },
    });
  });

  test("the evidence and the comparison settings are accepted; the comparison gets its defaults", async () => {
    const created = await apps.create({
      metadata: { name: "compared" },
      spec: {
        ...seedSpec,
        analysis: {
          requireTraffic: true,
          minRequests: 50,
          trafficQuery: 'sum(increase(requests_total{workload="{{secondary}}"}[{{stepWindow}}]))',
          inconclusiveLimit: 3,
          compare: {},
        },
      },
    });
    // The schema's defaults are the controller's (src/api/defaults.ts).
    assert.deepEqual(created.spec.analysis?.compare, {
      minSamples: DEFAULTS.compareMinSamples,
      errorMarginPercent: DEFAULTS.compareErrorMarginPercent,
      latencyRatioMax: DEFAULTS.compareLatencyRatioMax,
    });
    assert.equal(created.spec.analysis?.minRequests, 50);
    assert.equal(created.spec.analysis?.inconclusiveLimit, 3);
  });

  test("the mirror and A/B phases are accepted, with their defaults; gateway-api is a mesh", async () => {
    const created = await apps.create({
      metadata: { name: "phases" },
      spec: {
        ...seedSpec,
        mesh: "gateway-api",
        analysis: {
          mirror: { percent: 20 },
          match: {
            rules: [
              { headers: { "x-canary": { exact: "insider" }, "user-agent": { regex: ".*Mobile.*" } } },
              { cookie: { name: "canary", value: "always" } },
            ],
            iterations: 2,
          },
          weighted: false,
        },
      },
    });
    assert.equal(created.spec.mesh, "gateway-api");
    assert.deepEqual(created.spec.analysis?.mirror, { percent: 20, iterations: 1 });
    assert.equal(created.spec.analysis?.match?.iterations, 2);
    assert.equal(created.spec.analysis?.weighted, false);
  });

  test("a batch release without a mesh is accepted and gets its pause default", async () => {
    const created = await apps.create({
      metadata: { name: "batches" },
      spec: {
        ...seedSpec,
        replicas: 4,
        mesh: "none",
        strategy: { type: "batches", batches: { count: 2 } },
        analysis: { trafficQuery: 'sum(increase(http_requests_total{app="{{name}}"}[{{stepWindow}}]))' },
      },
    });
    assert.deepEqual(created.spec.strategy, { type: "batches", batches: { count: 2, pause: DEFAULTS.batchPause } });
    assert.equal(created.spec.mesh, "none");
  });

  test("without a mesh, requireTraffic: false is the other way to say what proves the new version", async () => {
    const created = await apps.create({
      metadata: { name: "batches-unproven" },
      spec: {
        ...seedSpec,
        replicas: 4,
        mesh: "none",
        strategy: { type: "batches", batches: { count: 2 } },
        analysis: { requireTraffic: false },
      },
    });
    assert.equal(created.spec.analysis?.requireTraffic, false);
  });

  test("a StatefulSet workload is accepted; its kind and the StatefulSet's immutable fields cannot change", async () => {
    const workload = {
      kind: "StatefulSet" as const,
      serviceName: "db-headless",
      podManagementPolicy: "Parallel" as const,
      volumeClaimTemplates: [{ name: "data", mountPath: "/data", storage: "1Gi", storageClassName: "manual" }],
    };
    const created = await apps.create({ metadata: { name: "stateful" }, spec: { ...seedSpec, replicas: 3, workload } });
    assert.deepEqual(created.spec.workload, workload);
    const changes: [string, Record<string, unknown>, RegExp][] = [
      [
        "kind",
        { workload: { kind: "Deployment", serviceName: null, podManagementPolicy: null, volumeClaimTemplates: null } },
        /workload\.kind cannot change/,
      ],
      ["removed", { workload: null }, /workload\.kind cannot change/],
      ["serviceName", { workload: { serviceName: "other" } }, /serviceName cannot change/],
      [
        "podManagementPolicy",
        { workload: { podManagementPolicy: "OrderedReady" } },
        /podManagementPolicy cannot change/,
      ],
      [
        "volumeClaimTemplates",
        { workload: { volumeClaimTemplates: [{ name: "data", mountPath: "/data", storage: "2Gi" }] } },
        /volumeClaimTemplates cannot change/,
      ],
    ];
    for (const [what, spec, message] of changes) {
      const error = await apps.patchSpec("stateful", spec as Partial<CanaryApp["spec"]>).then(
        () => undefined,
        (e: unknown) => e,
      );
      assert.ok(error, `a change of ${what} was accepted`);
      assert.match(rejectionMessage(error), message, what);
    }
    const plain = await apps.create({ metadata: { name: "plain" }, spec: seedSpec });
    const error = await apps.patchSpec(plain.metadata.name ?? "", { workload: { kind: "StatefulSet" } }).then(
      () => undefined,
      (e: unknown) => e,
    );
    assert.match(
      rejectionMessage(error),
      /workload\.kind cannot change/,
      "a Deployment app cannot become a StatefulSet",
    );
  });

  test("templates, a score and a judged metric with its provider are accepted; a template's kind defaults", async () => {
    const created = await apps.create({
      metadata: { name: "templated" },
      spec: {
        ...seedSpec,
        analysis: {
          templates: [
            { name: "rates", args: [{ name: "max_rate", value: "1" }] },
            { name: "rates", kind: "ClusterCanaryAnalysisTemplate" },
          ],
          score: { pass: 90, marginal: 70 },
          metrics: [
            {
              name: "latency",
              query: "sum(rate(x[1m]))",
              judge: { direction: "increase", confidence: 0.9 },
              interval: "10s",
              weight: 2,
              critical: true,
              mustHaveData: false,
              provider: { type: "prometheus", address: "http://thanos.monitoring.svc:9090" },
            },
          ],
        },
      },
    });
    assert.deepEqual(
      created.spec.analysis?.templates?.map((t) => t.kind),
      ["CanaryAnalysisTemplate", "ClusterCanaryAnalysisTemplate"],
    );
    assert.equal(created.spec.analysis?.metrics?.[0]?.weight, 2);
  });

  for (const [index, bad] of invalid.entries()) {
    test(`rejects: ${bad.name}`, async () => {
      const name = bad.metadataName ?? `bad-${index}`;
      const error = await apps.create({ metadata: { name }, spec: bad.spec as unknown as CanaryApp["spec"] }).then(
        () => undefined,
        (e: unknown) => e,
      );
      assert.ok(error, `${bad.name}: the API server accepted it`);
      const message = rejectionMessage(error);
      assert.match(message, bad.message);
    });
  }
});

describe("analysis template API validation", () => {
  const kc = testKubeConfig();
  let namespaced: ReturnType<typeof analysisTemplates>;
  const cluster = analysisTemplates(kc, undefined);
  const suffix = Math.random().toString(16).slice(2, 8);
  const SPEC: CanaryAnalysisTemplateSpec = {
    args: [{ name: "max_rate", value: "1" }, { name: "service" }],
    metrics: [
      { name: "errors", query: 'sum(rate(e{svc="{{args.service}}"}[{{interval}}])) > {{args.max_rate}}', max: 0 },
    ],
  };

  before(async () => {
    namespaced = analysisTemplates(kc, await createTestNamespace(kc, "crd-tpl"));
  });

  test("a CanaryAnalysisTemplate and a ClusterCanaryAnalysisTemplate with args and metrics are accepted", async () => {
    const a = await namespaced.create({ metadata: { name: "slo" }, spec: SPEC });
    assert.deepEqual(a.spec, SPEC);
    const name = `slo-${suffix}`;
    try {
      const b = await cluster.create({ metadata: { name }, spec: SPEC });
      assert.equal(b.metadata.namespace, undefined);
    } finally {
      await cluster.delete(name).catch(() => undefined);
    }
  });

  const bad: { name: string; spec: Record<string, unknown>; message: RegExp }[] = [
    { name: "no metrics", spec: { args: [] }, message: /spec\.metrics: Required value/ },
    {
      name: "two metrics of one name",
      spec: { metrics: [metric, metric] },
      message: /metrics\[1\]: Duplicate value/,
    },
    {
      name: "two args of one name",
      spec: { args: [{ name: "a" }, { name: "a", value: "1" }], metrics: [metric] },
      message: /args\[1\]: Duplicate value/,
    },
    {
      name: "an arg that is not an identifier",
      spec: { args: [{ name: "1st" }], metrics: [metric] },
      message: /an arg's name is an identifier/,
    },
    {
      name: "a metric without a query (a template has no built-in metric)",
      spec: { metrics: [{ name: "request-success-rate", min: 99 }] },
      message: /metrics\[0\]\.query: Required value/,
    },
    {
      name: "a metric with neither min, max nor judge",
      spec: { metrics: [{ name: "errors", query: "up" }] },
      message: /a metric needs min, max or both, or a judge/,
    },
    {
      name: "a metric with a judge and a min",
      spec: { metrics: [{ name: "errors", query: "up", min: 1, judge: {} }] },
      message: /a metric is judged either by min\/max or by judge, not both/,
    },
    {
      name: "a negative weight",
      spec: { metrics: [{ ...metric, weight: -1 }] },
      message: /a metric's weight must be greater than 0/,
    },
    {
      name: "a provider of an unknown type",
      spec: { metrics: [{ ...metric, provider: { type: "splunk" } }] },
      message: /provider\.type: Unsupported value: "splunk"/,
    },
    {
      name: "an interval in words",
      spec: { metrics: [{ name: "errors", query: "up", judge: {}, interval: "10 seconds" }] },
      message: /a metric's interval must be a duration between 1s and 24h/,
    },
  ];
  for (const [index, b] of bad.entries()) {
    test(`rejects: ${b.name}`, async () => {
      for (const [kind, api, name] of [
        ["namespaced", namespaced, `bad-${index}`],
        ["cluster", cluster, `bad-${index}-${suffix}`],
      ] as const) {
        const error = await api
          .create({ metadata: { name }, spec: b.spec as unknown as CanaryAnalysisTemplateSpec })
          .then(
            () => undefined,
            (e: unknown) => e,
          );
        if (error === undefined && kind === "cluster") await cluster.delete(name).catch(() => undefined);
        assert.ok(error, `${b.name}: the API server accepted the ${kind} template`);
        assert.match(rejectionMessage(error), b.message);
      }
    });
  }
});

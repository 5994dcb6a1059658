import assert from "node:assert/strict";
import { describe, test } from "node:test";
import {
  analysisTemplate,
  argoRollouts,
  argoRolloutsManifests,
  canarySteps,
  POD_TEMPLATE_HASH,
  summarizeAnalysisRuns,
  type AnalysisRunLike,
} from "./argo-rollouts.js";
import { canaryapp } from "./canaryapp.js";
import type { ObjectView, Work } from "./peer.js";
import type { Seen } from "./watch.js";

const work: Work = { apps: 20, intervalSeconds: 10, stepWeight: 10, maxWeight: 50 };
const ctx = { namespace: "ns", prometheusUrl: "http://127.0.0.1:9090", work };

describe("the Argo Rollouts peer is given the others' work", () => {
  test("canarySteps: each of the others' weights, held one interval; the pauses add up to the steps' floor", () => {
    assert.deepEqual(canarySteps({ stepWeight: 10, maxWeight: 30, intervalSeconds: 10 }), [
      { setWeight: 10 },
      { pause: { duration: "10s" } },
      { setWeight: 20 },
      { pause: { duration: "10s" } },
      { setWeight: 30 },
      { pause: { duration: "10s" } },
    ]);
    const steps = canarySteps(work) as { setWeight?: number; pause?: { duration: string } }[];
    const weights = steps.flatMap((s) => (s.setWeight === undefined ? [] : [s.setWeight]));
    assert.deepEqual(weights, [10, 20, 30, 40, 50]);
    assert.equal(weights.length, work.maxWeight / work.stepWeight, "as many steps as canaryapp's and Flagger's");
    const paused = steps.reduce((sum, s) => sum + (s.pause === undefined ? 0 : Number.parseInt(s.pause.duration)), 0);
    assert.equal(paused, (work.maxWeight / work.stepWeight) * work.intervalSeconds);
  });

  test("the AnalysisTemplate asks the same Prometheus canaryapp's check asks, the same query, the same bound", () => {
    const ours = canaryapp.manifests(ctx, "app-00", "img:v1")[0] as {
      spec: { prometheusURL: string; analysis: { interval: string; metrics: { query: string; min: number }[] } };
    };
    const check = ours.spec.analysis.metrics[0];
    const metric = analysisTemplate("ns", ctx.prometheusUrl, work).spec.metrics[0];
    assert.ok(check !== undefined && metric !== undefined);
    assert.equal(metric.provider.prometheus.address, ours.spec.prometheusURL);
    assert.equal(metric.provider.prometheus.query, check.query);
    assert.equal(metric.successCondition, `result[0] >= ${check.min}`);
    assert.equal(metric.interval, ours.spec.analysis.interval);
    // The first failed measurement fails the run: the others' threshold 1.
    assert.equal(metric.failureLimit, 0);
  });

  test("the Rollout takes its template from the app's Deployment and weighs the route and subsets that are made", () => {
    const [target, service, destinationRule, virtualService, rollout] = argoRolloutsManifests(ctx, "app-00", "img:v1");
    const r = rollout as {
      spec: {
        replicas: number;
        template?: unknown;
        workloadRef: { kind: string; name: string; scaleDown: string };
        strategy: {
          canary: {
            analysis: { templates: { templateName: string }[] };
            trafficRouting: {
              istio: {
                virtualService: { name: string; routes: string[] };
                destinationRule: { name: string; canarySubsetName: string; stableSubsetName: string };
              };
            };
          };
        };
      };
    };
    assert.equal(r.spec.template, undefined, "no template of its own: the Deployment's");
    assert.deepEqual(
      { kind: r.spec.workloadRef.kind, name: r.spec.workloadRef.name },
      { kind: "Deployment", name: target.metadata?.name },
    );
    assert.equal(r.spec.workloadRef.scaleDown, "onsuccess");
    assert.equal(r.spec.replicas, target.spec?.replicas);
    assert.equal(
      r.spec.strategy.canary.analysis.templates[0]?.templateName,
      analysisTemplate("ns", "", work).metadata.name,
    );
    const istio = r.spec.strategy.canary.trafficRouting.istio;
    const vs = virtualService as {
      metadata: { name: string };
      spec: {
        hosts: string[];
        http: { name: string; route: { destination: { host: string; subset: string }; weight: number }[] }[];
      };
    };
    const dr = destinationRule as { metadata: { name: string }; spec: { host: string; subsets: { name: string }[] } };
    assert.equal(istio.virtualService.name, vs.metadata.name);
    assert.deepEqual(
      istio.virtualService.routes,
      vs.spec.http.map((h) => h.name),
    );
    assert.equal(istio.destinationRule.name, dr.metadata.name);
    assert.deepEqual(
      dr.spec.subsets.map((s) => s.name),
      [istio.destinationRule.stableSubsetName, istio.destinationRule.canarySubsetName],
    );
    // Every destination is a subset of the app's Service, which selects the Deployment's pods.
    assert.deepEqual(vs.spec.hosts, [service.metadata?.name]);
    assert.equal(dr.spec.host, service.metadata?.name);
    assert.deepEqual(
      vs.spec.http[0]?.route.map((d) => `${d.destination.host}/${d.destination.subset} ${d.weight}`),
      ["app-00/stable 100", "app-00/canary 0"],
    );
    assert.deepEqual(service.spec?.selector, target.spec?.template.metadata?.labels);
  });
});

/** A view over plain objects, keyed by the collection's resource (the path's last segment). */
function viewOf(objects: Record<string, Seen[]>): ObjectView {
  const resource = (path: string) => path.split("/").at(-1) ?? "";
  return {
    get: (path, name) => objects[resource(path)]?.find((o) => o.metadata.name === name),
    list: (path) => objects[resource(path)] ?? [],
  };
}

const replicaSet = (hash: string, image: string, replicas: number): Seen => ({
  metadata: {
    name: `app-00-${hash}`,
    labels: { app: "app-00", [POD_TEMPLATE_HASH]: hash },
    ownerReferences: [{ kind: "Rollout", name: "app-00" }],
  },
  spec: { replicas, template: { spec: { containers: [{ name: "app", image }] } } },
});
const route = (stable: number, canary: number): Seen => ({
  metadata: { name: "app-00" },
  spec: {
    http: [
      {
        name: "primary",
        route: [
          { destination: { host: "app-00", subset: "stable" }, weight: stable },
          { destination: { host: "app-00", subset: "canary" }, weight: canary },
        ],
      },
    ],
  },
});
const subsets = (stable: string | undefined, canary: string | undefined): Seen => ({
  metadata: { name: "app-00" },
  spec: {
    subsets: [
      { name: "stable", ...(stable ? { labels: { [POD_TEMPLATE_HASH]: stable } } : {}) },
      { name: "canary", ...(canary ? { labels: { [POD_TEMPLATE_HASH]: canary } } : {}) },
    ],
  },
});
const rollout = (phase: string, stableRS: string, currentPodHash: string): Seen => ({
  metadata: { name: "app-00" },
  status: { phase, stableRS, currentPodHash },
});
const target = (replicas: number): Seen => ({ metadata: { name: "app-00" }, spec: { replicas } });

describe("where an Argo Rollout stands, read from its objects", () => {
  const at = (view: ObjectView, image: string) => ({
    scaledUp: argoRollouts.scaledUp(view, "ns", "app-00", image),
    weighted: argoRollouts.weighted(view, "ns", "app-00"),
    allTrafficOn: argoRollouts.allTrafficOn(view, "ns", "app-00", image),
    atRest: argoRollouts.atRest(view, "ns", "app-00", image),
  });
  const cases: { name: string; objects: Record<string, Seen[]>; image: string; expected: ReturnType<typeof at> }[] = [
    {
      name: "created: the Rollout has not yet set the subsets' labels",
      objects: {
        rollouts: [rollout("Progressing", "a", "a")],
        deployments: [target(1)],
        replicasets: [replicaSet("a", "v1", 1)],
        virtualservices: [route(100, 0)],
        destinationrules: [subsets(undefined, undefined)],
      },
      image: "v1",
      expected: { scaledUp: true, weighted: false, allTrafficOn: false, atRest: false },
    },
    {
      name: "healthy on v1, the Deployment scaled down",
      objects: {
        rollouts: [rollout("Healthy", "a", "a")],
        deployments: [target(0)],
        replicasets: [replicaSet("a", "v1", 1)],
        virtualservices: [route(100, 0)],
        destinationrules: [subsets("a", "a")],
      },
      image: "v1",
      expected: { scaledUp: true, weighted: false, allTrafficOn: true, atRest: true },
    },
    {
      name: "healthy on v1, but the Deployment still runs its own pod",
      objects: {
        rollouts: [rollout("Healthy", "a", "a")],
        deployments: [target(1)],
        replicasets: [replicaSet("a", "v1", 1)],
        virtualservices: [route(100, 0)],
        destinationrules: [subsets("a", "a")],
      },
      image: "v1",
      expected: { scaledUp: true, weighted: false, allTrafficOn: true, atRest: false },
    },
    {
      name: "v2 scaled up, no weight yet",
      objects: {
        rollouts: [rollout("Progressing", "a", "b")],
        deployments: [target(0)],
        replicasets: [replicaSet("a", "v1", 1), replicaSet("b", "v2", 1)],
        virtualservices: [route(100, 0)],
        destinationrules: [subsets("a", "b")],
      },
      image: "v2",
      expected: { scaledUp: true, weighted: false, allTrafficOn: false, atRest: false },
    },
    {
      name: "v2 at its first step",
      objects: {
        rollouts: [rollout("Paused", "a", "b")],
        deployments: [target(0)],
        replicasets: [replicaSet("a", "v1", 1), replicaSet("b", "v2", 1)],
        virtualservices: [route(90, 10)],
        destinationrules: [subsets("a", "b")],
      },
      image: "v2",
      expected: { scaledUp: true, weighted: true, allTrafficOn: false, atRest: false },
    },
    {
      name: "weight on the canary subset while it still selects the stable pods: not yet the new version's",
      objects: {
        rollouts: [rollout("Progressing", "a", "b")],
        deployments: [target(0)],
        replicasets: [replicaSet("a", "v1", 1), replicaSet("b", "v2", 1)],
        virtualservices: [route(90, 10)],
        destinationrules: [subsets("a", "a")],
      },
      image: "v2",
      expected: { scaledUp: true, weighted: false, allTrafficOn: false, atRest: false },
    },
    {
      name: "promoted: all traffic on v2's pods, v1's kept for scaleDownDelaySeconds",
      objects: {
        rollouts: [rollout("Healthy", "b", "b")],
        deployments: [target(0)],
        replicasets: [replicaSet("a", "v1", 1), replicaSet("b", "v2", 1)],
        virtualservices: [route(100, 0)],
        destinationrules: [subsets("b", "b")],
      },
      image: "v2",
      expected: { scaledUp: true, weighted: false, allTrafficOn: true, atRest: false },
    },
    {
      name: "at rest on v2: v1's ReplicaSet scaled down",
      objects: {
        rollouts: [rollout("Healthy", "b", "b")],
        deployments: [target(0)],
        replicasets: [replicaSet("a", "v1", 0), replicaSet("b", "v2", 1)],
        virtualservices: [route(100, 0)],
        destinationrules: [subsets("b", "b")],
      },
      image: "v2",
      expected: { scaledUp: true, weighted: false, allTrafficOn: true, atRest: true },
    },
    {
      name: "the weights at 100 on stable while the stable subset still selects v1: not all traffic on v2",
      objects: {
        rollouts: [rollout("Healthy", "b", "b")],
        deployments: [target(0)],
        replicasets: [replicaSet("a", "v1", 1), replicaSet("b", "v2", 1)],
        virtualservices: [route(100, 0)],
        destinationrules: [subsets("a", "b")],
      },
      image: "v2",
      expected: { scaledUp: true, weighted: false, allTrafficOn: false, atRest: false },
    },
  ];
  for (const c of cases) {
    test(c.name, () => assert.deepEqual(at(viewOf(c.objects), c.image), c.expected));
  }

  test("a ReplicaSet of another Rollout whose name starts alike is not this one's", () => {
    const other: Seen = {
      ...replicaSet("c", "v2", 1),
      metadata: { name: "app-00-x-c", ownerReferences: [{ kind: "Rollout", name: "app-00-x" }] },
    };
    assert.equal(argoRollouts.scaledUp(viewOf({ replicasets: [other] }), "ns", "app-00", "v2"), false);
  });
});

describe("summarizeAnalysisRuns: what the Rollouts' checks measured", () => {
  const run = (owner: string, phase: string, count: number, values: string[]): AnalysisRunLike => ({
    metadata: { name: `${owner}-x-2`, ownerReferences: [{ kind: "Rollout", name: owner }] },
    status: {
      phase,
      metricResults: [{ count, successful: count, measurements: values.map((value) => ({ value })) }],
    },
  });

  test("counts the runs of the apps named, their measurements and the values the provider answered", () => {
    assert.equal(
      summarizeAnalysisRuns(
        [
          run("app-00", "Successful", 6, ["[100]"]),
          run("app-01", "Successful", 7, ["[100]"]),
          run("app-05", "Failed", 1, ["[0]"]),
        ],
        ["app-00", "app-01"],
      ),
      "2 AnalysisRuns (Successful 2): 13 measurements, 13 successful, values [100]",
    );
  });

  test("none", () => {
    assert.equal(summarizeAnalysisRuns([], ["app-00"]), "0 AnalysisRuns: 0 measurements, 0 successful");
  });
});

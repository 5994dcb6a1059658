/**
 * Istio's own validation of every shape of object the controller writes: the controller's pure builders
 * (desiredChildren with the Istio router, as the reconciler calls it, then the share label of a sharded replica
 * and the applied-hash annotation, as it writes them) for a Deployment app and a StatefulSet app, at rest, in the
 * middle of a test, promoting, with `spec.service.hosts`/`gateways`, the A/B and mirror phases, a batch release's weights, and the handover
 * route of an app switched from `mesh: istio` to `none`; each object in a YAML file of its own, checked by
 * `istioctl validate` (built by `make istioctl`). Services and workloads are checked too: istioctl validates those
 * it knows (Service port names, a Deployment's labels).
 *
 * Broken objects made from the same builders show that istioctl rejects what it must, so these tests can fail.
 * (Weights summing to something other than 100 are not among them: Istio accepts them and normalises, only a
 * total of 0 is refused; readIstioWeights is the stricter one, reading such a route as not ours.)
 *
 * Needs no cluster: runs under `make test-e2e` because that is where istioctl is built.
 */
import assert from "node:assert/strict";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { dumpYaml } from "@kubernetes/client-node";
import { withDefaults } from "../src/api/defaults.js";
import { normalRule } from "../src/api/match-rule.js";
import type { CanaryApp, CanaryAppSpec } from "../src/api/types.js";
import { LABELS } from "../src/api/types.js";
import { shareLabelValue, shareOf } from "../src/controller/shards.js";
import { desiredChildren, withMetadataLabels, type ChildObject } from "../src/resources/children.js";
import { withAppliedHash } from "../src/resources/applied-hash.js";
import type { Plan, Weights } from "../src/rollout/types.js";
import { istioRouter, type VirtualServiceObject } from "../src/router/istio.js";
import { noMeshRouter } from "../src/router/none.js";
import type { TrafficRouter } from "../src/router/router.js";
import { statefulSetTarget } from "../src/workload/statefulset.js";
import type { AnyWorkloadTarget } from "../src/workload/workload.js";
import { istioctlPath, istioValidate } from "./istioctl.js";

const NAMESPACE = "shop";
const NAME = "web";
const SHARES = 32;

function app(spec: Partial<CanaryAppSpec> = {}): CanaryApp {
  return {
    apiVersion: "canaryapp.io/v1alpha1",
    kind: "CanaryApp",
    metadata: { name: NAME, namespace: NAMESPACE, uid: "6f1c2a9e-0d4b-4c8e-9a51-3e2b7c9d0f11", generation: 3 },
    spec: { image: "registry.example/web:v1", imageListenPort: 8080, replicas: 4, testReplicas: 1, ...spec },
  };
}

const V1 = { image: "registry.example/web:v1", replicas: 4 };
const V2 = { image: "registry.example/web:v2", replicas: 1 };

function plan(weights: Weights, secondary: Plan["secondary"], status: Plan["status"] = {}): Plan {
  return { primary: V1, secondary, weights, status, events: [], tellChildUpdates: true, removeAnnotations: [] };
}

const promoting: Plan["status"] = {
  canary: {
    image: V2.image,
    stage: "Promoting",
    step: 4,
    startedAt: "2026-11-27T10:00:00Z",
    stepStartedAt: "2026-11-27T10:05:00Z",
    failedChecks: 0,
  },
};

interface Shape {
  name: string;
  app: CanaryApp;
  plan: Plan;
  workload?: AnyWorkloadTarget;
  /** Istio's by default. */
  router?: TrafficRouter;
  /** The Istio kinds among the children: a VirtualService and a DestinationRule unless said otherwise. */
  istioKinds?: string[];
}

const DEPLOYMENT = app();
const STATEFULSET = app({ workload: { kind: "StatefulSet" } });
const WITH_HOSTS = app({
  service: { port: 8080, hosts: ["web.example.com", "web"], gateways: ["istio-system/public", "mesh"] },
});
const BATCHES = app({ strategy: { type: "batches", batches: { count: 2, pause: "first" } } });
const NO_MESH = app({
  mesh: "none",
  strategy: { type: "batches", batches: { count: 2, pause: "first" } },
  analysis: { requireTraffic: false },
});

const AB_RULES = [
  normalRule({ headers: { "x-canary": { exact: "insider" } } }),
  normalRule({ cookie: { name: "canary", value: "always" }, headers: { "user-agent": { regex: ".*Mobile.*" } } }),
];

const SHAPES: Shape[] = [
  { name: "deployment-at-rest", app: DEPLOYMENT, plan: plan({ primary: 100, secondary: 0 }, null) },
  { name: "deployment-mid-test", app: DEPLOYMENT, plan: plan({ primary: 90, secondary: 10 }, V2) },
  { name: "deployment-promoting", app: DEPLOYMENT, plan: plan({ primary: 50, secondary: 50 }, V2, promoting) },
  {
    name: "deployment-rollback-route-refused",
    app: DEPLOYMENT,
    plan: { ...plan({ primary: 70, secondary: 30 }, V2), secondaryServiceSelects: "primary" },
  },
  // The A/B phase (an ab-match route before the split, header and cookie matches) and the mirror phase (ADR 0027).
  { name: "ab-phase", app: WITH_HOSTS, plan: plan({ primary: 100, secondary: 0, match: AB_RULES }, V2) },
  { name: "mirror-phase", app: WITH_HOSTS, plan: plan({ primary: 100, secondary: 0, mirror: 20 }, V2) },
  { name: "hosts-gateways-at-rest", app: WITH_HOSTS, plan: plan({ primary: 100, secondary: 0 }, null) },
  { name: "hosts-gateways-mid-test", app: WITH_HOSTS, plan: plan({ primary: 80, secondary: 20 }, V2) },
  {
    name: "statefulset-at-rest",
    app: STATEFULSET,
    plan: plan({ primary: 100, secondary: 0 }, null),
    workload: statefulSetTarget,
  },
  {
    name: "statefulset-mid-test",
    app: STATEFULSET,
    plan: plan({ primary: 90, secondary: 10 }, V2),
    workload: statefulSetTarget,
  },
  {
    name: "statefulset-promoting",
    app: STATEFULSET,
    plan: plan({ primary: 50, secondary: 50 }, V2, promoting),
    workload: statefulSetTarget,
  },
  // A batch release routes by the same builder; its weights are the new version's share of the replicas, up to 100.
  { name: "batches-first-batch", app: BATCHES, plan: plan({ primary: 75, secondary: 25 }, { ...V2, replicas: 1 }) },
  { name: "batches-last-batch", app: BATCHES, plan: plan({ primary: 0, secondary: 100 }, { ...V2, replicas: 4 }) },
  // `mesh: istio` switched to `none`: the VirtualService kept from it routes everything to the app's Service
  // before it goes (the DestinationRule is left as it was, then deleted with it).
  {
    name: "mesh-none-handover",
    app: NO_MESH,
    plan: {
      ...plan({ primary: 75, secondary: 25 }, V2),
      routeHandover: { kind: "handOver", of: "VirtualService", at: "2026-11-27T10:00:00Z" },
    },
    router: noMeshRouter,
    istioKinds: ["VirtualService"],
  },
];

/** The children of a shape as the reconciler writes them (a sharded replica's: with the share label). */
function written(shape: Shape): ChildObject[] {
  const labels = { [LABELS.share]: shareLabelValue(shareOf(`${NAMESPACE}/${NAME}`, SHARES), SHARES) };
  const router = shape.router ?? istioRouter;
  const { apply } = desiredChildren(shape.app, withDefaults(shape.app.spec), shape.plan, router, shape.workload);
  return apply.map((child) => withAppliedHash(withMetadataLabels(child, labels)));
}

let dir = "";

async function fileOf(name: string, object: unknown): Promise<string> {
  const file = join(dir, `${name}.yaml`);
  await writeFile(file, dumpYaml(object));
  return file;
}

before(async () => {
  istioctlPath(); // a missing binary fails here, naming `make istioctl`
  dir = await mkdtemp(join(tmpdir(), "canaryapp-istio-validate-"));
});
after(async () => {
  if (dir) await rm(dir, { recursive: true, force: true });
});

describe("istioctl validate: every shape of object the controller writes is valid", () => {
  for (const shape of SHAPES) {
    test(shape.name, async () => {
      const children = written(shape);
      const istioKinds = children.map((c) => c.kind).filter((k) => k === "VirtualService" || k === "DestinationRule");
      assert.deepEqual(istioKinds, shape.istioKinds ?? ["DestinationRule", "VirtualService"]);
      const files = await Promise.all(
        children.map((c) => fileOf(`${shape.name}-${c.kind.toLowerCase()}-${c.metadata.name}`, c)),
      );
      const runs = await Promise.all(files.map((f) => istioValidate(f)));
      runs.forEach((run, i) => {
        const file = files[i] ?? "";
        const said = (run.stdout + run.stderr).trim();
        assert.equal(run.code, 0, `istioctl validate -f ${file}: ${said}`);
        assert.ok(said.includes(`"${file}" is valid`), `istioctl validate -f ${file}: ${said}`);
        // istioctl prints warnings (deprecated fields, ...) beside "is valid": none expected.
        assert.doesNotMatch(said, /warn/i, `istioctl validate -f ${file}: ${said}`);
      });
      const vs = children.find((c) => c.kind === "VirtualService") as VirtualServiceObject;
      const route = vs.spec.http[0]?.route.map((r) => `${r.destination.host.split(".")[0] ?? ""} ${r.weight}`);
      console.log(`# ${shape.name}: ${children.length} objects valid; route ${route?.join(", ") ?? "none"}`);
    });
  }
});

describe("istioctl validate rejects a broken VirtualService (the check can fail)", () => {
  const midTest = () => {
    const shape = SHAPES.find((s) => s.name === "deployment-mid-test");
    assert.ok(shape);
    return structuredClone(written(shape).find((c) => c.kind === "VirtualService") as VirtualServiceObject);
  };
  const broken: [string, (vs: VirtualServiceObject) => void, RegExp][] = [
    [
      "a destination without host",
      (vs) => {
        const destination: { host?: string } | undefined = vs.spec.http[0]?.route[1]?.destination;
        delete destination?.host;
      },
      /empty domain name not allowed/,
    ],
    [
      "a negative weight",
      (vs) => {
        for (const [i, weight] of [110, -10].entries()) {
          const d = vs.spec.http[0]?.route[i];
          if (d) d.weight = weight;
        }
      },
      /weight -10 < 0/,
    ],
    [
      "weights summing to 0",
      (vs) => {
        for (const d of vs.spec.http[0]?.route ?? []) d.weight = 0;
      },
      /total destination weight = 0/,
    ],
  ];
  for (const [name, breakIt, expected] of broken) {
    test(name, async () => {
      const vs = midTest();
      breakIt(vs);
      const file = await fileOf(`broken-${name.replaceAll(" ", "-")}`, vs);
      const run = await istioValidate(file);
      const said = (run.stdout + run.stderr).trim();
      assert.notEqual(run.code, 0, `istioctl validate accepted ${name}: ${said}`);
      assert.match(said, expected);
      assert.doesNotMatch(said, /is valid/);
      console.log(
        `# ${name}: ${
          said
            .split("\n")
            .find((l) => expected.test(l))
            ?.trim() ?? said
        }`,
      );
    });
  }
});

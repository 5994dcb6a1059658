/**
 * The controller's runtime against a real kube-apiserver: the seed manifest yields its four children with
 * owner references; hand edits are repaired; spec changes reach the children; at rest it writes nothing.
 */
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { AppsV1Api, CoreV1Api, CustomObjectsApi } from "@kubernetes/client-node";
import { canaryApps, createTestNamespace, eventually, MERGE_PATCH, testKubeConfig } from "../support/kube.js";
import { runController, type TestController } from "../support/controller.js";
import { getDeployment, istioObjects, setDeploymentAvailable, weightsOf } from "../support/workloads.js";
import { SEED_SPEC } from "../../src/resources/fixtures.test-helpers.js";

const seedSpec = SEED_SPEC;
const NAME = "canaryapp-sample";

describe("owned children", () => {
  const kc = testKubeConfig();
  const appsApi = kc.makeApiClient(AppsV1Api);
  const core = kc.makeApiClient(CoreV1Api);
  let namespace: string;
  let apps: ReturnType<typeof canaryApps>;
  let istio: ReturnType<typeof istioObjects>;
  let controller: TestController;
  let uid: string;

  before(async () => {
    namespace = await createTestNamespace(kc, "children");
    apps = canaryApps(kc, namespace);
    istio = istioObjects(kc, namespace);
    controller = runController(namespace);
    uid = (await apps.create({ metadata: { name: NAME }, spec: seedSpec })).metadata.uid ?? "";
  });
  after(async () => controller.stop());

  test("the seed manifest yields primary Deployment, Service, DestinationRule and VirtualService", async () => {
    const primary = await eventually("primary Deployment", () => getDeployment(kc, namespace, `${NAME}-primary`));
    const owner = primary.metadata?.ownerReferences?.[0];
    assert.equal(owner?.kind, "CanaryApp");
    assert.equal(owner?.uid, uid);
    assert.equal(owner?.controller, true);
    assert.equal(primary.spec?.replicas, 2);
    const container = primary.spec?.template.spec?.containers[0];
    assert.equal(container?.image, seedSpec.image);
    assert.equal(container?.ports?.[0]?.containerPort, 8088);
    assert.equal(primary.spec?.template.metadata?.labels?.["canaryapp.io/track"], "primary");

    const service = await eventually("Service", () => core.readNamespacedService({ namespace, name: NAME }));
    assert.equal(service.metadata?.ownerReferences?.[0]?.uid, uid);
    assert.equal(service.spec?.ports?.[0]?.targetPort, 8088);
    // The primary only: callers outside the mesh never reach a secondary (ADR 0010).
    assert.deepEqual(service.spec?.selector, { "canaryapp.io/app": NAME, "canaryapp.io/track": "primary" });

    const dr = await eventually("DestinationRule", () => istio.getDestinationRule(NAME));
    assert.deepEqual(
      dr.spec.subsets.map((s) => s.name),
      ["primary"],
    );
    const vs = await eventually("VirtualService", () => istio.getVirtualService(NAME));
    assert.deepEqual(vs.spec.gateways, ["mesh"]);
    // One name per host as Istio resolves it (istioctl analyze IST0109 otherwise).
    assert.deepEqual(vs.spec.hosts, [`${NAME}.${namespace}.svc.cluster.local`]);
    assert.deepEqual(weightsOf(vs), [100, 0]);

    assert.ok(!(await getDeployment(kc, namespace, `${NAME}-secondary`)), "no secondary for the first image");
  });

  test("the status says Initializing until the primary is available, then Healthy", async () => {
    await eventually("phase Initializing", async () =>
      (await apps.get(NAME)).status?.phase === "Initializing" ? true : undefined,
    );
    await setDeploymentAvailable(kc, namespace, `${NAME}-primary`);
    const status = await eventually("phase Healthy", async () => {
      const app = await apps.get(NAME);
      return app.status?.phase === "Healthy" ? app.status : undefined;
    });
    assert.equal(status.primaryImage, seedSpec.image);
    assert.deepEqual(status.weights, { primary: 100, secondary: 0 });
    assert.equal(status.conditions?.find((c) => c.type === "Ready")?.status, "True");
  });

  test("a deleted primary Deployment is recreated", async () => {
    const started = Date.now();
    await appsApi.deleteNamespacedDeployment({ namespace, name: `${NAME}-primary` });
    const recreated = await eventually("primary recreated", async () => {
      const d = await getDeployment(kc, namespace, `${NAME}-primary`);
      return d && !d.metadata?.deletionTimestamp ? d : undefined;
    });
    assert.equal(recreated.spec?.template.spec?.containers[0]?.image, seedSpec.image);
    console.log(`# repaired a deleted primary Deployment in ${Date.now() - started} ms`);
    await setDeploymentAvailable(kc, namespace, `${NAME}-primary`);
  });

  test("a hand-scaled primary is scaled back", async () => {
    const started = Date.now();
    await appsApi.patchNamespacedDeployment(
      { namespace, name: `${NAME}-primary`, body: { spec: { replicas: 5 } } },
      MERGE_PATCH,
    );
    await eventually("replicas back to 2", async () => {
      const d = await getDeployment(kc, namespace, `${NAME}-primary`);
      return d?.spec?.replicas === 2 && d.metadata?.generation !== undefined && d.metadata.generation > 1
        ? true
        : undefined;
    });
    console.log(`# repaired a hand-scaled primary in ${Date.now() - started} ms`);
  });

  test("hand-edited VirtualService weights are put back", async () => {
    const started = Date.now();
    await istio.setWeights(NAME, 50, 50);
    await eventually("weights back to 100/0", async () => {
      const w = weightsOf(await istio.getVirtualService(NAME));
      return w[0] === 100 && w[1] === 0 ? true : undefined;
    });
    console.log(`# repaired hand-edited weights in ${Date.now() - started} ms`);
  });

  /**
   * A change to the pod template is a revision, tested on the secondary before it reaches the primary
   * (ADR 0011): here the secondary is made available and promoted by hand (the seed's Prometheus is not
   * consulted before the first step), and the primary then rolls out the tested template.
   */
  async function promoteTestedRevision(): Promise<void> {
    await eventually("a secondary with the new revision", () => getDeployment(kc, namespace, `${NAME}-secondary`));
    await setDeploymentAvailable(kc, namespace, `${NAME}-secondary`);
    await eventually("the secondary seen ready (the first step)", async () =>
      (await apps.get(NAME)).status?.canary?.stage === "Stepping" ? true : undefined,
    );
    await apps.annotate(NAME, { "canaryapp.io/promote": "now" });
    await eventually("Promoting", async () =>
      (await apps.get(NAME)).status?.canary?.stage === "Promoting" ? true : undefined,
    );
    await eventually(
      "promoted, the secondary gone",
      async () =>
        // Plays the Deployment controller for the primary's new template, whenever it is applied.
        (await setDeploymentAvailable(kc, namespace, `${NAME}-primary`)) !== undefined &&
        (await apps.get(NAME)).status?.canary === undefined &&
        (await getDeployment(kc, namespace, `${NAME}-secondary`)) === undefined
          ? true
          : undefined,
      { timeoutMs: 30_000 },
    );
  }

  test("a spec change reaches the children", { timeout: 90_000 }, async () => {
    await apps.patchSpec(NAME, {
      replicas: 3,
      imageListenPort: 9090,
      pod: { env: [{ name: "GREETING", value: "hi" }], labels: { team: "payments" } },
    });
    // The pod template is tested first: the primary keeps its port while the secondary runs the new one.
    const secondary = await eventually("secondary with the new template", () =>
      getDeployment(kc, namespace, `${NAME}-secondary`),
    );
    assert.equal(secondary.spec?.template.spec?.containers[0]?.ports?.[0]?.containerPort, 9090);
    const during = await eventually("primary resized", async () => {
      const d = await getDeployment(kc, namespace, `${NAME}-primary`);
      return d?.spec?.replicas === 3 ? d : undefined;
    });
    assert.equal(during.spec?.template.spec?.containers[0]?.ports?.[0]?.containerPort, 8088);
    await promoteTestedRevision();

    const primary = await eventually("primary updated", async () => {
      const d = await getDeployment(kc, namespace, `${NAME}-primary`);
      return d?.spec?.replicas === 3 && d.spec.template.spec?.containers[0]?.ports?.[0]?.containerPort === 9090
        ? d
        : undefined;
    });
    const container = primary.spec?.template.spec?.containers[0];
    assert.equal(container?.ports?.[0]?.containerPort, 9090);
    assert.deepEqual(
      container?.env?.map((e) => ({ name: e.name, value: e.value })),
      [{ name: "GREETING", value: "hi" }],
    );
    assert.equal(primary.spec?.template.metadata?.labels?.team, "payments");
    const service = await eventually("Service updated", async () => {
      const s = await core.readNamespacedService({ namespace, name: NAME });
      return s.spec?.ports?.[0]?.targetPort === 9090 ? s : undefined;
    });
    assert.equal(service.spec?.ports?.[0]?.port, 80);

    // Removing a pod setting removes it from the Deployment too (once tested).
    await apps.patchSpec(NAME, { pod: { env: null, labels: { team: "payments" } } } as never);
    await promoteTestedRevision();
    await eventually("env removed", async () => {
      const d = await getDeployment(kc, namespace, `${NAME}-primary`);
      return d?.spec?.template.spec?.containers[0]?.env === undefined ? true : undefined;
    });
    await setDeploymentAvailable(kc, namespace, `${NAME}-primary`);
  });

  test("at rest the controller writes nothing for 30 s", { timeout: 60_000 }, async () => {
    await eventually("Healthy again", async () =>
      (await apps.get(NAME)).status?.phase === "Healthy" ? true : undefined,
    );
    // Let the last writes' watch events come back and settle.
    await new Promise((r) => setTimeout(r, 2_000));
    const snapshot = async () => {
      const custom = kc.makeApiClient(CustomObjectsApi);
      const lists = await Promise.all([
        custom.listNamespacedCustomObject({
          group: "canaryapp.io",
          version: "v1alpha1",
          plural: "canaryapps",
          namespace,
        }),
        appsApi.listNamespacedDeployment({ namespace }),
        core.listNamespacedService({ namespace }),
        core.listNamespacedEvent({ namespace }),
        custom.listNamespacedCustomObject({
          group: "networking.istio.io",
          version: "v1",
          plural: "virtualservices",
          namespace,
        }),
        custom.listNamespacedCustomObject({
          group: "networking.istio.io",
          version: "v1",
          plural: "destinationrules",
          namespace,
        }),
      ]);
      // Item resourceVersions, not the lists': a list's is the cluster-wide revision, which other writers move.
      return lists.flatMap((l) =>
        (l as { items: { kind?: string; metadata?: { name?: string; resourceVersion?: string } }[] }).items.map(
          (i) => `${i.metadata?.name}@${i.metadata?.resourceVersion}`,
        ),
      );
    };
    const start = Date.now();
    const before = await snapshot();
    await new Promise((r) => setTimeout(r, 30_000));
    const after = await snapshot();
    const writes = controller.observer.writesSince(start);
    assert.deepEqual(writes, [], "the controller made API writes at rest");
    assert.deepEqual(after, before, "objects in the namespace changed at rest");
  });
});

/**
 * What a sidecar reports about its own pod, rule by rule. Paths are in istio.io/istio unless they say
 * istio/proxy.
 */
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { pod, statefulSetPod } from "./fixtures.test-helpers.js";
import { canonicalService, deployMetaName, workloadMeta, workloadName, type PodMetaLike } from "./istio-workload.js";

const meta = (p: { metadata?: PodMetaLike }): PodMetaLike => p.metadata ?? {};

describe("workload name", () => {
  // pkg/kube/util.go, GetDeployMetaFromPod: a ReplicaSet owner whose name ends with the pod's
  // pod-template-hash is trimmed of `-<hash>`, which leaves the Deployment's name.
  test("a Deployment's pod: its ReplicaSet's name without the template hash", () => {
    const p = meta(pod("web", "shop", "secondary", "web-secondary-7b9c6d5f8-x2k4q", "web:v2"));
    assert.equal(p.ownerReferences?.[0]?.name, "web-secondary-7b9c6d5f8");
    assert.equal(deployMetaName(p), "web-secondary");
    assert.equal(workloadMeta(p).name, "web-secondary");
  });

  // pkg/kube/util.go, GetDeployMetaFromPod: only a hash the owner's name ends with is trimmed; any other
  // controller owner gives its own name.
  test("a ReplicaSet whose name does not end with the hash keeps its name", () => {
    const p = meta(pod("web", "shop", "primary", "p", "web:v1"));
    const labels = { ...p.labels, "pod-template-hash": "ffffffff" };
    assert.equal(deployMetaName({ ...p, labels }), "web-primary-5d8f7c9b4");
  });

  // pkg/kube/util.go, GetDeployMetaFromPod: a StatefulSet owner gives the StatefulSet's name, whatever
  // revision the pod runs: both tracks of a StatefulSet app report one destination_workload.
  test("a StatefulSet's pods of two revisions: the same workload, different canonical revisions", () => {
    const stable = workloadMeta(meta(statefulSetPod("db", "shop", 0, "6f7d8c", "db:v1")));
    const tested = workloadMeta(meta(statefulSetPod("db", "shop", 2, "9a1b2c", "db:v2")));
    assert.equal(stable.name, "db");
    assert.equal(tested.name, "db");
    assert.equal(stable.canonicalService, tested.canonicalService);
    assert.deepEqual([stable.canonicalRevision, tested.canonicalRevision], ["6f7d8c", "9a1b2c"]);
  });

  // pkg/kube/util.go, GetDeployMetaFromPod: the owner is consulted only for a pod whose name was generated
  // and that has a controller owner; otherwise the pod's own name.
  test("a pod with no generated name or no controller owner: its own name", () => {
    const p = meta(pod("web", "shop", "primary", "web-primary-5d8f7c9b4-abcde", "web:v1"));
    assert.equal(deployMetaName({ ...p, generateName: undefined }), "web-primary-5d8f7c9b4-abcde");
    const notController = (p.ownerReferences ?? []).map((r) => ({ ...r, controller: false }));
    assert.equal(deployMetaName({ ...p, ownerReferences: notController }), "web-primary-5d8f7c9b4-abcde");
    assert.equal(deployMetaName({ name: "lonely" }), "lonely");
  });

  // pkg/kube/util.go, GetDeployMetaFromPod: Argo Rollouts' ReplicaSets (rollouts-pod-template-hash),
  // OpenShift's DeploymentConfigs (deploymentconfig label) and a CronJob's Jobs (`<cronjob>-<8..10 digits>`).
  test("the other owners Istio knows: Argo Rollout, DeploymentConfig, CronJob", () => {
    const owned = (kind: string, name: string, labels: Record<string, string>): PodMetaLike => ({
      name: "x-1",
      generateName: "x-",
      labels,
      ownerReferences: [{ kind, name, controller: true }],
    });
    assert.equal(
      deployMetaName(owned("ReplicaSet", "web-6dc78b855c", { "rollouts-pod-template-hash": "6dc78b855c" })),
      "web",
    );
    assert.equal(deployMetaName(owned("ReplicationController", "web-3", { deploymentconfig: "web" })), "web");
    assert.equal(deployMetaName(owned("Job", "report-28405680", {})), "report");
    assert.equal(deployMetaName(owned("Job", "once", {})), "once");
  });

  // manifests/charts/istio-control/istio-discovery/files/injection-template.yaml (ISTIO_META_WORKLOAD_NAME)
  // and pkg/kube/util.go, GetWorkloadMetaFromPod: the service.istio.io/workload-name label wins.
  test("the workload-name label overrides the name Istio would guess", () => {
    const p = meta(pod("web", "shop", "secondary", "p", "web:v2"));
    const labels = { ...p.labels, "service.istio.io/workload-name": "web-canary" };
    assert.equal(workloadName({ ...p, labels }), "web-canary");
    assert.equal(workloadMeta({ ...p, labels }).name, "web-canary");
  });
});

describe("canonical service and revision", () => {
  // pkg/kube/labels/labels.go, CanonicalService (nameLabels): service.istio.io/canonical-name, then
  // app.kubernetes.io/name, then app, else the workload's name.
  test("the name: canonical-name, app.kubernetes.io/name, app, then the deployment's name", () => {
    const base = meta(pod("web", "shop", "primary", "p", "web:v1"));
    const named = (labels: Record<string, string>) => canonicalService({ ...base, labels }).service;
    assert.equal(
      named({ "service.istio.io/canonical-name": "shop-web", "app.kubernetes.io/name": "w", app: "web" }),
      "shop-web",
    );
    assert.equal(named({ "app.kubernetes.io/name": "w", app: "web" }), "w");
    assert.equal(named({ app: "web", "pod-template-hash": "5d8f7c9b4" }), "web");
    assert.equal(named({ "pod-template-hash": "5d8f7c9b4" }), "web-primary");
  });

  // injection-template.yaml (service.istio.io/canonical-name): its fallback is .DeploymentMeta.Name, the
  // guessed name, not the workload-name label.
  test("the name's fallback is the guessed deployment name, even with a workload-name label", () => {
    const base = meta(pod("web", "shop", "primary", "p", "web:v1"));
    const labels = { "pod-template-hash": "5d8f7c9b4", "service.istio.io/workload-name": "other" };
    assert.equal(canonicalService({ ...base, labels }).service, "web-primary");
  });

  // pkg/kube/labels/labels.go, CanonicalService (revisionLabels): app.kubernetes.io/version is read
  // before version.
  test("app.kubernetes.io/version beats version", () => {
    const labels = { app: "web", version: "secondary", "app.kubernetes.io/version": "2.1.0" };
    assert.equal(canonicalService({ name: "p", labels }).revision, "2.1.0");
    assert.equal(canonicalService({ name: "p", labels: { app: "web", version: "secondary" } }).revision, "secondary");
  });

  // pkg/kube/labels/labels.go, CanonicalService: service.istio.io/canonical-revision beats both.
  test("canonical-revision beats app.kubernetes.io/version and version", () => {
    const labels = {
      "service.istio.io/canonical-revision": "secondary",
      "app.kubernetes.io/version": "2.1.0",
      version: "v2",
    };
    assert.equal(canonicalService({ name: "p", labels }).revision, "secondary");
  });

  // pkg/kube/labels/labels.go, canonicalServiceRevision: none of the labels, "latest".
  test("no revision label: latest", () => {
    assert.equal(canonicalService({ name: "p", labels: { app: "web" } }).revision, "latest");
    assert.equal(canonicalService({ name: "p" }).revision, "latest");
  });
});

describe("app and version", () => {
  // istio/proxy source/extensions/filters/http/istio_stats/istio_stats.cc reads destination_app and
  // destination_version from the node metadata's LABELS `app` and `version`
  // (testdata/server_node_metadata.json.tmpl → testdata/metric/server_request_total.yaml.tmpl); absent, empty.
  test("the pod's own app and version labels, empty when absent", () => {
    const deployment = workloadMeta(meta(pod("web", "shop", "secondary", "p", "web:v2")));
    assert.deepEqual([deployment.app, deployment.version], ["web", "secondary"]);
    const bare = workloadMeta({ name: "p", labels: { "app.kubernetes.io/name": "web" } });
    assert.deepEqual([bare.app, bare.version, bare.canonicalService], ["", "", "web"]);
  });
});

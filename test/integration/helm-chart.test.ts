/**
 * The Helm chart (charts/canaryapp) against config/ and a real API server: `helm lint`, the chart's CRD is
 * crds/canaryapp.yaml, `helm template` renders the objects of `kubectl kustomize config/default` (and, with
 * watchNamespaces, of config/namespaced) where they matter, the admission policy of config/admission included,
 * values reach the container and the policy's expressions, and
 * `helm template | kubectl apply --dry-run=server -f -` is accepted by the API server.
 */
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { readFile } from "node:fs/promises";
import { join } from "node:path";
import { promisify } from "node:util";
import { before, describe, test } from "node:test";
import { CoreV1Api, loadAllYaml, type V1Deployment, type V1PolicyRule } from "@kubernetes/client-node";
import { findRepoRoot } from "../../e2e/cluster/toolchain.js";
import { Kubectl, toolchainKubectl } from "../../e2e/demo/kubectl.js";
import { statusCodeOf } from "../../src/kube/errors.js";
import { CHART, helmBinary, helmTemplate, shell } from "../support/helm.js";
import { testKubeConfig, testKubeConfigPath } from "../support/kube.js";
import { kustomize, type Manifest } from "../support/rbac.js";

const repoRoot = findRepoRoot();
const kubectl = new Kubectl(toolchainKubectl(), testKubeConfigPath());
const execFileAsync = promisify(execFile);

type Rbac = Manifest & { rules?: V1PolicyRule[]; subjects?: unknown[]; roleRef?: unknown };

function find<T extends Manifest>(objects: Manifest[], kind: string, name: string, namespace?: string): T {
  const found = objects.find(
    (o) =>
      o.kind === kind && o.metadata.name === name && (namespace === undefined || o.metadata.namespace === namespace),
  );
  assert.ok(found, `${kind} ${namespace ?? ""}/${name} is rendered`);
  return found as T;
}

/** What matters of the controller's Deployment: everything but labels, which the chart adds to. */
function deploymentEssentials(d: V1Deployment): unknown {
  const pod = d.spec?.template.spec;
  const container = pod?.containers[0];
  return {
    namespace: (d as Manifest).metadata.namespace,
    replicas: d.spec?.replicas,
    selector: d.spec?.selector,
    annotations: d.spec?.template.metadata?.annotations,
    serviceAccountName: pod?.serviceAccountName,
    podSecurityContext: pod?.securityContext,
    terminationGracePeriodSeconds: pod?.terminationGracePeriodSeconds,
    containers: pod?.containers.length,
    container: {
      name: container?.name,
      image: container?.image,
      imagePullPolicy: container?.imagePullPolicy,
      args: container?.args,
      command: container?.command,
      env: container?.env,
      ports: container?.ports,
      livenessProbe: container?.livenessProbe,
      readinessProbe: container?.readinessProbe,
      resources: container?.resources,
      securityContext: container?.securityContext,
    },
  };
}

function rbacEssentials(o: Rbac): unknown {
  return {
    kind: o.kind,
    name: o.metadata.name,
    namespace: o.metadata.namespace,
    rules: o.rules,
    roleRef: o.roleRef,
    subjects: o.subjects,
  };
}

function rbacOf(objects: Manifest[]): unknown[] {
  return objects
    .filter((o) => /^(Cluster)?Role(Binding)?$/.test(o.kind))
    .map((o) => rbacEssentials(o as Rbac))
    .sort((a, b) => JSON.stringify(a).localeCompare(JSON.stringify(b)));
}

/** The admission policy and its binding, without the labels the chart adds. */
function admissionOf(objects: Manifest[]): unknown {
  const kinds = ["ValidatingAdmissionPolicy", "ValidatingAdmissionPolicyBinding"];
  const found = objects
    .filter((o) => o.metadata.name === "canaryapp-tenancy")
    .map((o) => {
      const { metadata, ...rest } = o as Manifest & Record<string, unknown>;
      return { ...rest, name: metadata.name, namespace: metadata.namespace };
    })
    .sort((a, b) => a.kind.localeCompare(b.kind));
  assert.deepEqual(
    found.map((o) => o.kind),
    [...kinds].sort(),
  );
  // As plain JSON: both are read into client-node's classes, which the comparison should not depend on.
  return JSON.parse(JSON.stringify(found));
}

function containerEnv(objects: Manifest[]): Record<string, string | undefined> {
  const d = find<Manifest & V1Deployment>(objects, "Deployment", "canaryapp-controller");
  return Object.fromEntries((d.spec?.template.spec?.containers[0]?.env ?? []).map((e) => [e.name, e.value]));
}

describe("Helm chart charts/canaryapp", () => {
  // The dry runs need the namespaces to exist. They are left in place: without a controller manager (the api
  // profile), a deleted namespace stays Terminating and would refuse the next file's objects.
  before(async () => {
    const core = testKubeConfig().makeApiClient(CoreV1Api);
    for (const name of ["canaryapp-system", "team-a"]) {
      await core.createNamespace({ body: { metadata: { name } } }).catch((err: unknown) => {
        if (statusCodeOf(err) !== 409) throw err;
      });
    }
  });

  test("helm lint passes in both install modes", async () => {
    const out = await shell(`helm lint ${CHART} && helm lint ${CHART} --set 'watchNamespaces={team-a,team-b}'`);
    assert.match(out, /1 chart\(s\) linted, 0 chart\(s\) failed/);
    assert.doesNotMatch(out, /\[(ERROR|WARNING)\]/, out);
  });

  test("the chart's CRDs are those of crds/, byte for byte (make chart copies them)", async () => {
    const rendered = await helmTemplate();
    for (const [file, names] of [
      ["canaryapp.yaml", ["canaryapps.canaryapp.io"]],
      [
        "analysis-templates.yaml",
        ["canaryanalysistemplates.canaryapp.io", "clustercanaryanalysistemplates.canaryapp.io"],
      ],
    ] as const) {
      const [source, chart] = await Promise.all([
        readFile(join(repoRoot, "crds", file), "utf8"),
        readFile(join(repoRoot, CHART, "crds", file), "utf8"),
      ]);
      assert.equal(chart, source, "run `make chart`");
      names.forEach((name, i) =>
        assert.deepEqual(find(rendered, "CustomResourceDefinition", name), loadAllYaml(source)[i]),
      );
    }
  });

  test("the default values render config/default: RBAC rules, ServiceAccount, Deployment, CRD, admission policy", async () => {
    const [chart, config] = await Promise.all([helmTemplate(), kustomize(kubectl, repoRoot, "config/default")]);
    assert.deepEqual(rbacOf(chart), rbacOf(config));
    find(chart, "ServiceAccount", "canaryapp-controller", "canaryapp-system");
    assert.deepEqual(
      deploymentEssentials(find<Manifest & V1Deployment>(chart, "Deployment", "canaryapp-controller")),
      deploymentEssentials(find<Manifest & V1Deployment>(config, "Deployment", "canaryapp-controller")),
    );
    assert.deepEqual(
      find(chart, "CustomResourceDefinition", "canaryapps.canaryapp.io"),
      find(config, "CustomResourceDefinition", "canaryapps.canaryapp.io"),
    );
    assert.deepEqual(admissionOf(chart), admissionOf(config));
    // Nothing the kustomization has is missing from the chart (the Namespace is helm's --create-namespace).
    for (const o of config.filter((c) => c.kind !== "Namespace")) find(chart, o.kind, o.metadata.name);
    assert.equal(
      chart.some((o) => o.kind === "ServiceMonitor"),
      false,
      "the ServiceMonitor is off by default",
    );
  });

  test("watchNamespaces renders config/namespaced: a Role per namespace, cluster-wide only reading cluster templates", async () => {
    const [chart, config] = await Promise.all([
      helmTemplate(["watchNamespaces={team-a}"]),
      kustomize(kubectl, repoRoot, "config/namespaced"),
    ]);
    assert.deepEqual(rbacOf(chart), rbacOf(config));
    assert.deepEqual(
      chart
        .filter((o) => o.kind === "ClusterRole" || o.kind === "ClusterRoleBinding")
        .map((o) => `${o.kind}/${o.metadata.name}`)
        .sort(),
      [
        "ClusterRole/canaryapp-controller-cluster-templates",
        "ClusterRoleBinding/canaryapp-controller-cluster-templates",
      ],
    );
    assert.deepEqual(
      deploymentEssentials(find<Manifest & V1Deployment>(chart, "Deployment", "canaryapp-controller")),
      deploymentEssentials(find<Manifest & V1Deployment>(config, "Deployment", "canaryapp-controller")),
    );

    assert.deepEqual(admissionOf(chart), admissionOf(config));

    const two = await helmTemplate(["watchNamespaces={team-a,team-b}"]);
    const roles = two.filter((o) => o.kind === "Role" && o.metadata.name === "canaryapp-controller");
    assert.deepEqual(
      roles.map((r) => r.metadata.namespace),
      ["team-a", "team-b"],
    );
    const env = find<Manifest & V1Deployment>(two, "Deployment", "canaryapp-controller").spec?.template.spec
      ?.containers[0]?.env;
    assert.equal(env?.find((e) => e.name === "WATCH_NAMESPACES")?.value, "team-a,team-b");
  });

  test("values reach the controller: image, Prometheus URL and URL policy, log level, resources, leader election", async () => {
    const objects = await helmTemplate([
      "image.repository=registry.example.com/canaryapp",
      "image.tag=v1.2.3",
      "prometheusURL=http://prom.monitoring.svc:9090",
      "prometheusURLPolicy={*.svc,https://metrics.example.com}",
      "logLevel=debug",
      "resources.limits.memory=1Gi",
      "leaderElection.enabled=false",
      "replicas=1",
      "metrics.serviceMonitor.enabled=true",
    ]);
    const d = find<Manifest & V1Deployment>(objects, "Deployment", "canaryapp-controller");
    const container = d.spec?.template.spec?.containers[0];
    const env = Object.fromEntries((container?.env ?? []).map((e) => [e.name, e.value]));
    assert.equal(container?.image, "registry.example.com/canaryapp:v1.2.3");
    assert.equal(env["PROMETHEUS_URL"], "http://prom.monitoring.svc:9090");
    assert.equal(env["PROMETHEUS_URL_POLICY"], "*.svc,https://metrics.example.com");
    assert.equal(env["LOG_LEVEL"], "debug");
    assert.equal(env["LEADER_ELECT"], "false");
    assert.equal(env["SHARDS"], undefined, "no sharding without Leases");
    assert.equal(container?.resources?.limits?.["memory"], "1Gi");
    assert.equal(d.spec?.replicas, 1);
    const monitor = find<Manifest & { spec: { endpoints: { port: string }[] } }>(
      objects,
      "ServiceMonitor",
      "canaryapp-controller",
    );
    assert.equal(monitor.spec.endpoints[0]?.port, "http");
  });

  test("notificationURL reaches the controller as NOTIFICATION_URL, and is absent by default", async () => {
    const envOf = async (values: string[]) => {
      const d = find<Manifest & V1Deployment>(await helmTemplate(values), "Deployment", "canaryapp-controller");
      return Object.fromEntries((d.spec?.template.spec?.containers[0]?.env ?? []).map((e) => [e.name, e.value]));
    };
    assert.equal(
      (await envOf(["notificationURL=https://hooks.example.com/canary"]))["NOTIFICATION_URL"],
      "https://hooks.example.com/canary",
    );
    assert.equal("NOTIFICATION_URL" in (await envOf([])), false);
  });

  test("tenancy reaches the policy's allowances and the controller's ALLOWED_HOSTS and ALLOWED_GATEWAYS; empty by default", async () => {
    const objects = await helmTemplate(
      [
        "tenancy.allowedHosts={*.example.com,api.example.org}",
        "tenancy.allowedGateways={istio-system/public-gw,edge/*}",
      ],
      "platform",
    );
    type Policy = Manifest & { spec: { variables?: { name: string; expression: string }[] } };
    const allowances = (policy: Policy) => JSON.parse(JSON.stringify(policy.spec.variables?.slice(0, 2))) as unknown;
    // CEL string literals, where the kustomization's patch puts them (config/admission/kustomization.yaml).
    assert.deepEqual(allowances(find<Policy>(objects, "ValidatingAdmissionPolicy", "canaryapp-tenancy")), [
      { name: "allowedHostsText", expression: "'*.example.com,api.example.org'" },
      { name: "allowedGatewaysText", expression: "'istio-system/public-gw,edge/*'" },
    ]);
    assert.equal(
      objects.some((o) => o.kind === "ConfigMap" && o.metadata.name === "canaryapp-tenancy"),
      false,
      "no params ConfigMap",
    );
    const binding = find<Manifest & { spec: unknown }>(
      objects,
      "ValidatingAdmissionPolicyBinding",
      "canaryapp-tenancy",
    );
    assert.deepEqual(JSON.parse(JSON.stringify(binding.spec)), {
      policyName: "canaryapp-tenancy",
      validationActions: ["Deny"],
    });
    const env = containerEnv(objects);
    assert.equal(env["ALLOWED_HOSTS"], "*.example.com,api.example.org");
    assert.equal(env["ALLOWED_GATEWAYS"], "istio-system/public-gw,edge/*");

    const defaults = await helmTemplate();
    assert.deepEqual(allowances(find<Policy>(defaults, "ValidatingAdmissionPolicy", "canaryapp-tenancy")), [
      { name: "allowedHostsText", expression: "''" },
      { name: "allowedGatewaysText", expression: "''" },
    ]);
    assert.equal("ALLOWED_HOSTS" in containerEnv(defaults), false);
    assert.equal("ALLOWED_GATEWAYS" in containerEnv(defaults), false);
  });

  test("admissionPolicy.enabled=false renders neither policy nor binding; the controller keeps its lists", async () => {
    const objects = await helmTemplate(["admissionPolicy.enabled=false", "tenancy.allowedHosts={*.example.com}"]);
    assert.deepEqual(
      objects.filter((o) => o.metadata.name === "canaryapp-tenancy").map((o) => o.kind),
      [],
    );
    assert.equal(containerEnv(objects)["ALLOWED_HOSTS"], "*.example.com");
  });

  test("an entry with a quote or a backslash cannot end the policy's CEL literal, even without the schema", async () => {
    for (const set of ["tenancy.allowedHosts={a'b.example.com}", "tenancy.allowedGateways={edge/a\\\\b}"]) {
      await assert.rejects(helmTemplate([set]), /values don't meet the specifications of the schema/);
      const unchecked = execFileAsync(
        helmBinary(),
        ["template", "canaryapp", CHART, "--skip-schema-validation", "--set", set],
        {
          cwd: repoRoot,
        },
      );
      await assert.rejects(unchecked, /an entry may hold no quote or backslash/);
    }
  });

  for (const mode of [
    { name: "cluster-wide", set: "" },
    { name: "namespaced", set: "--set 'watchNamespaces={team-a}'" },
  ]) {
    test(`${mode.name}: helm template | kubectl apply --dry-run=server -f - is accepted`, async () => {
      const out = await shell(
        `helm template canaryapp ${CHART} -n canaryapp-system --include-crds --set grafanaDashboard.enabled=true ${mode.set} | kubectl apply --dry-run=server -f -`,
        { KUBECONFIG: testKubeConfigPath() },
      );
      const lines = out.trim().split("\n");
      for (const line of lines) assert.match(line, / (created|configured|unchanged) \(server dry run\)$/, out);
      assert.ok(
        lines.some((l) => l.startsWith("deployment.apps/canaryapp-controller ")),
        out,
      );
      assert.ok(
        lines.some((l) => l.startsWith("configmap/canaryapp-dashboard ")),
        out,
      );
      for (const object of [
        "validatingadmissionpolicy.admissionregistration.k8s.io/canaryapp-tenancy ",
        "validatingadmissionpolicybinding.admissionregistration.k8s.io/canaryapp-tenancy ",
      ]) {
        assert.ok(
          lines.some((l) => l.startsWith(object)),
          out,
        );
      }
    });
  }

  test("the dashboard's ConfigMap (config/grafana) is accepted by the API server", async () => {
    const out = await shell(
      "kubectl apply --dry-run=server -n canaryapp-system -f config/grafana/canaryapp-dashboard-configmap.yaml",
      { KUBECONFIG: testKubeConfigPath() },
    );
    assert.equal(out.trim(), "configmap/canaryapp-dashboard created (server dry run)");
  });

  test("bad values are refused by the chart's schema, naming the value", async () => {
    for (const [set, answer] of [
      ["logLevel=verbose", /logLevel must be one of the following: "trace", "debug", "info"/],
      ["watchNamespaces={Team_A}", /watchNamespaces\.0: Does not match pattern/],
      ["prometheusURL=prom:9090", /prometheusURL: Does not match pattern/],
      ["replicas=0", /replicas: Must be greater than or equal to 1/],
      ["tenancy.allowedHosts={Shop.Example.com}", /tenancy\.allowedHosts\.0: Does not match pattern/],
      ["tenancy.allowedGateways={public-gw}", /tenancy\.allowedGateways\.0: Does not match pattern/],
      ["tenancy.allowedHosts={shop.example.com'}", /tenancy\.allowedHosts\.0: Does not match pattern/],
      ["tenancy.allowedGateways={edge/gw\\\\}", /tenancy\.allowedGateways\.0: Does not match pattern/],
    ] as const) {
      await assert.rejects(helmTemplate([set]), (err: Error) => {
        assert.match(err.message, /values don't meet the specifications of the schema/);
        assert.match(err.message, answer);
        return true;
      });
    }
  });
});

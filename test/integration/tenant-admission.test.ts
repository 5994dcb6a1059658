/**
 * config/admission on a real API server: the ValidatingAdmissionPolicy that checks, with the rights of whoever
 * writes a CanaryApp, what the CanaryApp asks the controller to create.
 *
 * Other files create CanaryApps as the cluster's admin at the same time, so the shipped policy is installed
 * under a name of this file's own, and a copy of the shipped binding (its own name) binds it only to this file's
 * namespace. Then an escalation matrix, run as `alice` with the Role of examples/limited-user and the real
 * kubectl (`--as alice`): each thing a spec can hand the controller's pods is refused, the message naming the
 * field and the missing right, and the same spec is accepted once alice holds exactly that right (or the
 * operator lists the host or gateway: the policy's first two variables, replaced as the kustomization's patch
 * replaces them). Fields the CRD does not have are refused under strict field validation and pruned under the
 * API server's default. Updates that change neither what runs nor how it is routed, and the status
 * subresource, are not checked.
 */
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import { mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join, relative } from "node:path";
import { after, before, describe, test } from "node:test";
import { CoreV1Api, loadAllYaml, type V1PolicyRule } from "@kubernetes/client-node";
import { findRepoRoot } from "../../e2e/cluster/toolchain.js";
import { Kubectl, toolchainKubectl } from "../../e2e/demo/kubectl.js";
import { createTestNamespace, eventually, testKubeConfig, testKubeConfigPath } from "../support/kube.js";
import { applyObjects, deleteObjects, kustomize, type Manifest } from "../support/rbac.js";

const repoRoot = findRepoRoot();
const USER = "alice";
const IMAGE = "registry.example.com/shop:v1";
/** The name of the shipped policy and binding. */
const SHIPPED = "canaryapp-tenancy";
/** The label that selects this file's namespaces for its binding. */
const SELECTOR = "tenant-admission.canaryapp.io/run";

type Spec = Record<string, unknown>;

interface Policy extends Manifest {
  spec: {
    failurePolicy?: string;
    matchConstraints?: { resourceRules?: { apiGroups: string[]; operations: string[]; resources: string[] }[] };
    /** The first two are the operator's allowances (see config/admission/kustomization.yaml). */
    variables?: { name: string; expression: string }[];
    validations?: { expression: string; messageExpression?: string }[];
  };
}

interface Binding extends Manifest {
  spec: {
    policyName: string;
    validationActions: string[];
    matchResources?: unknown;
  };
}

/** A kubectl run: exit code and both outputs (the API server's warnings arrive on stderr). */
interface Outcome {
  code: number | null;
  stdout: string;
  stderr: string;
}

function outcome(kubectl: Kubectl, args: string[], input = ""): Promise<Outcome> {
  return new Promise((resolve, reject) => {
    const child = spawn(kubectl.binary, args, { env: kubectl.env() });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (c: Buffer) => (stdout += c.toString()));
    child.stderr.on("data", (c: Buffer) => (stderr += c.toString()));
    child.once("error", reject);
    child.once("close", (code) => resolve({ code, stdout, stderr }));
    child.stdin.end(input);
  });
}

function canaryApp(name: string, spec: Spec): string {
  return JSON.stringify({
    apiVersion: "canaryapp.io/v1alpha1",
    kind: "CanaryApp",
    metadata: { name },
    spec: { image: IMAGE, imageListenPort: 8080, replicas: 1, testReplicas: 1, ...spec },
  });
}

function env(...entries: Spec[]): Spec {
  return { pod: { env: entries } };
}

const secretEnv = (name: string, secret: string): Spec => ({
  name,
  valueFrom: { secretKeyRef: { name: secret, key: "value" } },
});
const configMapEnv = (name: string, configMap: string): Spec => ({
  name,
  valueFrom: { configMapKeyRef: { name: configMap, key: "value" } },
});

/** A right alice is given for one case, and the `kubectl auth can-i` question that shows it has arrived. */
interface Grant {
  rules: V1PolicyRule[];
  canI: string[];
}

/** What the operator lists for one case, comma-separated: the policy's variables 0 and 1. */
interface Allowance {
  allowedHosts?: string;
  allowedGateways?: string;
}

/** A thing a spec can hand the controller's pods or route, refused to alice until she holds the right. */
interface RightCase {
  what: string;
  spec: (ns: string) => Spec;
  /** What alice is told. */
  refusal: (ns: string) => string;
  /** What makes the same spec acceptable: a right of alice's, or an entry of the operator's. */
  allow: { grant: Grant; as: string } | { allowance: (ns: string) => Allowance; as: string };
}

const secretGet = (...names: string[]): V1PolicyRule => ({
  apiGroups: [""],
  resources: ["secrets"],
  resourceNames: names,
  verbs: ["get"],
});

const CREATE_PODS: Grant = {
  rules: [{ apiGroups: [""], resources: ["pods"], verbs: ["create"] }],
  canI: ["create", "pods"],
};

const INJECTOR_REFUSAL = (annotation: string) => (ns: string) =>
  `spec.pod.annotations["${annotation}"]: user "alice" may not create pods in namespace ${ns}, so a CanaryApp may ` +
  `not have Istio's injector add volumes to its pods or replace their proxy's bootstrap`;

const PROBE_REFUSAL = (field: string) => (ns: string) =>
  `${field}: user "alice" may not create pods in namespace ${ns}, so a CanaryApp may not aim its pods' probes at ` +
  `another host`;

const hostRefusal = (index: number, host: string, ns: string, allowed = "none") =>
  `spec.service.hosts[${index}] "${host}" is not a Service of namespace ${ns} (name, name.${ns}, name.${ns}.svc or ` +
  `name.${ns}.svc.cluster.local, no wildcards) and not among the hosts the operator allows (${allowed}), so a ` +
  `CanaryApp's route may not answer for it`;

const gatewayRefusal = (index: number, gateway: string) =>
  `spec.service.gateways[${index}] "${gateway}" is not mesh and not among the gateways the operator allows ` +
  `(none), so a CanaryApp's route may not attach to it`;

/** A list as the policy reads it and names it in its refusals: entries trimmed, empty ones dropped. */
function listed(text: string | undefined, lowerCase: boolean): string {
  const entries = (text ?? "")
    .split(",")
    .map((e) => (lowerCase ? e.trim().toLowerCase() : e.trim()))
    .filter((e) => e !== "");
  return entries.length === 0 ? "none" : entries.join(", ");
}

/** A CEL string literal of `text`, as the operator writes one (no quote or backslash inside). */
function celString(text: string): string {
  assert.doesNotMatch(text, /['\\]/);
  return `'${text}'`;
}

const RIGHTS: RightCase[] = [
  {
    what: "a Secret through env[].valueFrom.secretKeyRef",
    spec: () => env({ name: "MODE", value: "live" }, secretEnv("DB_PASSWORD", "db-admin")),
    refusal: (ns) =>
      `spec.pod.env[1].valueFrom.secretKeyRef: user "alice" may not get Secret "db-admin" in namespace ${ns}, ` +
      `so a CanaryApp may not hand it to its pods`,
    allow: {
      as: "get on Secret db-admin",
      grant: { rules: [secretGet("db-admin")], canI: ["get", "secret/db-admin"] },
    },
  },
  {
    what: "a ConfigMap through env[].valueFrom.configMapKeyRef",
    spec: () => env(configMapEnv("PLATFORM_URL", "platform-config")),
    refusal: (ns) =>
      `spec.pod.env[0].valueFrom.configMapKeyRef: user "alice" may not get ConfigMap "platform-config" in ` +
      `namespace ${ns}, so a CanaryApp may not hand it to its pods`,
    allow: {
      as: "get on ConfigMap platform-config",
      grant: {
        rules: [{ apiGroups: [""], resources: ["configmaps"], resourceNames: ["platform-config"], verbs: ["get"] }],
        canI: ["get", "configmap/platform-config"],
      },
    },
  },
  {
    what: "a Secret through imagePullSecrets",
    spec: () => ({ pod: { imagePullSecrets: [{ name: "registry-admin" }] } }),
    refusal: (ns) =>
      `spec.pod.imagePullSecrets[0]: user "alice" may not get Secret "registry-admin" in namespace ${ns}, so a ` +
      `CanaryApp may not hand it to its pods`,
    allow: {
      as: "get on Secret registry-admin",
      grant: { rules: [secretGet("registry-admin")], canI: ["get", "secret/registry-admin"] },
    },
  },
  {
    what: "serviceAccountName deployer",
    spec: () => ({ pod: { serviceAccountName: "deployer" } }),
    refusal: (ns) =>
      `spec.pod.serviceAccountName: user "alice" may not create serviceaccounts/token for ServiceAccount ` +
      `"deployer" in namespace ${ns}, so a CanaryApp may not run its pods as it`,
    allow: {
      as: "create on serviceaccounts/token of deployer",
      grant: {
        rules: [
          { apiGroups: [""], resources: ["serviceaccounts/token"], resourceNames: ["deployer"], verbs: ["create"] },
        ],
        canI: ["create", "serviceaccount/deployer", "--subresource=token"],
      },
    },
  },
  {
    what: "a readiness probe with httpGet.host",
    spec: () => ({ pod: { readinessProbe: { httpGet: { host: "169.254.169.254", path: "/latest/", port: 80 } } } }),
    refusal: PROBE_REFUSAL("spec.pod.readinessProbe.httpGet.host"),
    allow: { as: "create pods", grant: CREATE_PODS },
  },
  {
    what: "a liveness probe with tcpSocket.host",
    spec: () => ({ pod: { livenessProbe: { tcpSocket: { host: "10.0.0.1", port: 6443 } } } }),
    refusal: PROBE_REFUSAL("spec.pod.livenessProbe.tcpSocket.host"),
    allow: { as: "create pods", grant: CREATE_PODS },
  },
  {
    what: "the annotation sidecar.istio.io/userVolume",
    spec: () => ({
      pod: { annotations: { "sidecar.istio.io/userVolume": '[{"name":"root","hostPath":{"path":"/"}}]' } },
    }),
    refusal: INJECTOR_REFUSAL("sidecar.istio.io/userVolume"),
    allow: { as: "create pods", grant: CREATE_PODS },
  },
  {
    what: "the annotation sidecar.istio.io/userVolumeMount",
    spec: () => ({
      pod: { annotations: { "sidecar.istio.io/userVolumeMount": '[{"name":"root","mountPath":"/h"}]' } },
    }),
    refusal: INJECTOR_REFUSAL("sidecar.istio.io/userVolumeMount"),
    allow: { as: "create pods", grant: CREATE_PODS },
  },
  {
    what: "the annotation sidecar.istio.io/bootstrapOverride",
    spec: () => ({ pod: { annotations: { "sidecar.istio.io/bootstrapOverride": "my-bootstrap" } } }),
    refusal: INJECTOR_REFUSAL("sidecar.istio.io/bootstrapOverride"),
    allow: { as: "create pods", grant: CREATE_PODS },
  },
  {
    what: "volumeClaimTemplates of a StatefulSet workload",
    spec: () => ({
      replicas: 2,
      workload: { kind: "StatefulSet", volumeClaimTemplates: [{ name: "data", mountPath: "/data", storage: "1Gi" }] },
    }),
    refusal: (ns) =>
      `spec.workload.volumeClaimTemplates: user "alice" may not create persistentvolumeclaims in namespace ${ns}, ` +
      `so a CanaryApp may not claim volumes for its pods`,
    allow: {
      as: "create persistentvolumeclaims",
      grant: {
        rules: [{ apiGroups: [""], resources: ["persistentvolumeclaims"], verbs: ["create"] }],
        canI: ["create", "persistentvolumeclaims"],
      },
    },
  },
  {
    what: "the host of another namespace's Service",
    spec: () => ({ service: { hosts: ["payments.billing.svc.cluster.local"] } }),
    refusal: (ns) => hostRefusal(0, "payments.billing.svc.cluster.local", ns),
    allow: { as: "allowedHosts lists it", allowance: () => ({ allowedHosts: "payments.billing.svc.cluster.local" }) },
  },
  {
    what: "a wildcard host, even over its own namespace",
    spec: (ns) => ({ service: { hosts: ["web", `*.${ns}.svc.cluster.local`] } }),
    refusal: (ns) => hostRefusal(1, `*.${ns}.svc.cluster.local`, ns),
    allow: { as: "allowedHosts is *", allowance: () => ({ allowedHosts: "*" }) },
  },
  {
    what: "a host outside the cluster",
    spec: () => ({ service: { hosts: ["shop.example.com"] } }),
    refusal: (ns) => hostRefusal(0, "shop.example.com", ns),
    allow: {
      as: "allowedHosts has *.example.com",
      allowance: () => ({ allowedHosts: " api.example.org , *.example.com" }),
    },
  },
  {
    what: "another namespace's gateway",
    spec: () => ({ service: { gateways: ["mesh", "istio-system/public-gw"] } }),
    refusal: () => gatewayRefusal(1, "istio-system/public-gw"),
    allow: { as: "allowedGateways lists it", allowance: () => ({ allowedGateways: "istio-system/public-gw" }) },
  },
  {
    what: "a gateway of its own namespace by its short name",
    spec: () => ({ service: { gateways: ["internal-gw"] } }),
    refusal: () => gatewayRefusal(0, "internal-gw"),
    allow: {
      as: "allowedGateways has its namespace/*",
      allowance: (ns) => ({ allowedGateways: `istio-system/*,${ns}/*` }),
    },
  },
];

/** Fields the CRD does not have: the API server prunes them, so they never reach the pods. */
const UNKNOWN: { what: string; field: string; spec: Spec }[] = [
  {
    what: "envFrom a Secret",
    field: "spec.pod.envFrom",
    spec: { pod: { envFrom: [{ secretRef: { name: "db-admin" } }] } },
  },
  {
    what: "a Secret volume",
    field: "spec.pod.volumes",
    spec: { pod: { volumes: [{ name: "creds", secret: { secretName: "db-admin" } }] } },
  },
  {
    what: "a projected ServiceAccount token",
    field: "spec.pod.volumes",
    spec: {
      pod: {
        volumes: [
          { name: "token", projected: { sources: [{ serviceAccountToken: { audience: "vault", path: "t" } }] } },
        ],
      },
    },
  },
  {
    what: "a hostPath volume",
    field: "spec.pod.volumes",
    spec: { pod: { volumes: [{ name: "root", hostPath: { path: "/" } }] } },
  },
  { what: "hostNetwork", field: "spec.pod.hostNetwork", spec: { pod: { hostNetwork: true } } },
  { what: "hostPID", field: "spec.pod.hostPID", spec: { pod: { hostPID: true } } },
  {
    what: "a privileged securityContext",
    field: "spec.pod.securityContext",
    spec: { pod: { securityContext: { privileged: true } } },
  },
];

describe("admission: a CanaryApp hands its pods only what its author may use", () => {
  const kc = testKubeConfig();
  const core = kc.makeApiClient(CoreV1Api);
  const kubectl = new Kubectl(toolchainKubectl(), testKubeConfigPath());
  const run = randomBytes(3).toString("hex");
  const policyName = `${SHIPPED}-${run}`;
  let shipped: Manifest[] = [];
  let installed: Manifest[] = [];
  /** This file's copy of the shipped policy, as installed. */
  let policy: Policy | undefined;
  /** Where alice works, the one namespace this file's binding selects. */
  let ns = "";
  let serial = 0;
  const nextName = () => `app-${++serial}`;

  const asAlice = (args: string[]) => [...args, "-n", ns, "--as", USER];
  const createAsAlice = (name: string, spec: Spec, extra: string[] = []) =>
    outcome(kubectl, asAlice(["create", "-f", "-", ...extra]), canaryApp(name, spec));

  /** The API server's refusal names the policy and carries the message the author reads. */
  function assertRefused(result: Outcome, message: string): void {
    assert.notEqual(result.code, 0, `accepted: ${result.stdout}`);
    assert.match(result.stderr, new RegExp(`ValidatingAdmissionPolicy '${policyName}' with binding '${policyName}'`));
    assert.ok(result.stderr.includes(`denied request: ${message}`), `${result.stderr}\nexpected: ${message}`);
  }

  function assertAccepted(result: Outcome): void {
    assert.equal(result.code, 0, result.stderr);
    assert.match(result.stdout, /canaryapp\.canaryapp\.io\/\S+ created/);
  }

  async function deleteApp(name: string): Promise<void> {
    await kubectl.run(["delete", "canaryapp", name, "-n", ns, "--ignore-not-found", "--wait"]);
  }

  async function canI(args: string[]): Promise<string> {
    const result = await outcome(kubectl, ["auth", "can-i", ...args, "-n", ns, "--as", USER]);
    return result.stdout.trim();
  }

  /** Gives alice `grant` (a Role and RoleBinding), runs `body`, and takes the grant back. */
  async function withGrant(name: string, grant: Grant, body: () => Promise<void>): Promise<void> {
    const role = { apiVersion: "rbac.authorization.k8s.io/v1", kind: "Role", metadata: { name }, rules: grant.rules };
    const binding = {
      apiVersion: "rbac.authorization.k8s.io/v1",
      kind: "RoleBinding",
      metadata: { name },
      roleRef: { apiGroup: "rbac.authorization.k8s.io", kind: "Role", name },
      subjects: [{ apiGroup: "rbac.authorization.k8s.io", kind: "User", name: USER }],
    };
    const manifests = JSON.stringify({ apiVersion: "v1", kind: "List", items: [role, binding] });
    await kubectl.run(["apply", "-n", ns, "-f", "-"], manifests);
    try {
      await eventually(`alice: can-i ${grant.canI.join(" ")}`, async () =>
        (await canI(grant.canI)) === "yes" ? true : undefined,
      );
      await body();
    } finally {
      await kubectl.run(["delete", "-n", ns, "-f", "-", "--wait"], manifests);
      await eventually(`alice: can-i ${grant.canI.join(" ")} no more`, async () =>
        (await canI(grant.canI)) === "no" ? true : undefined,
      );
    }
  }

  /**
   * Re-applies this file's policy with the operator's lists in its first two variables, as the kustomization's
   * documented patch sets them, and waits until the API server answers with them (it reads policies from an
   * informer): a foreign host is refused naming the new host list (or accepted, under `*`), and a foreign
   * gateway is refused naming the new gateway list.
   */
  async function setAllowance(allowance: Allowance): Promise<void> {
    assert.ok(policy, "the policy is installed");
    const next = structuredClone(policy);
    const [hosts, gateways] = next.spec.variables ?? [];
    assert.ok(hosts?.name === "allowedHostsText" && gateways?.name === "allowedGatewaysText");
    hosts.expression = celString(allowance.allowedHosts ?? "");
    gateways.expression = celString(allowance.allowedGateways ?? "");
    await applyObjects(kubectl, [next]);

    const hostList = listed(allowance.allowedHosts, true);
    const gatewayList = listed(allowance.allowedGateways, false);
    const hostProbe = { service: { hosts: ["probe.invalid"] } };
    const gatewayProbe = { service: { gateways: ["probe/gw"] } };
    let last: Outcome | undefined;
    await eventually(
      `the policy answers with hosts (${hostList}) and gateways (${gatewayList})`,
      async () => {
        last = await createAsAlice("probe", hostProbe, ["--dry-run=server"]);
        const hostsSeen = hostList.split(", ").includes("*")
          ? last.code === 0
          : last.stderr.includes(`hosts the operator allows (${hostList}),`);
        if (!hostsSeen) return undefined;
        last = await createAsAlice("probe", gatewayProbe, ["--dry-run=server"]);
        return last.stderr.includes(`gateways the operator allows (${gatewayList}),`) ? true : undefined;
      },
      { timeoutMs: 30_000, intervalMs: 200 },
    ).catch((err: unknown) => {
      throw new Error(`the policy never answered with the new lists: ${last?.stderr ?? ""}`, { cause: err });
    });
  }

  before(async () => {
    ns = await createTestNamespace(kc, "tenant");
    await kubectl.run(["label", "namespace", ns, `${SELECTOR}=${run}`]);
    // As the namespace's admin: alice's Role, and what she must not hand to pods she could not create.
    await kubectl.run(["apply", "-n", ns, "-f", join(repoRoot, "examples", "limited-user", "role.yaml")]);
    for (const name of ["db-admin", "registry-admin", "db-other"]) {
      await core.createNamespacedSecret({ namespace: ns, body: { metadata: { name }, stringData: { value: "x" } } });
    }
    await core.createNamespacedConfigMap({ namespace: ns, body: { metadata: { name: "platform-config" } } });
    await core.createNamespacedServiceAccount({ namespace: ns, body: { metadata: { name: "deployer" } } });

    shipped = await kustomize(kubectl, repoRoot, "config/admission");
    policy = structuredClone(shipped.find((o) => o.kind === "ValidatingAdmissionPolicy") as Policy);
    policy.metadata = { name: policyName };
    const shippedBinding = shipped.find((o) => o.kind === "ValidatingAdmissionPolicyBinding") as Binding;
    // A copy of the shipped binding, selecting this file's namespace by its label.
    const binding: Binding = {
      ...structuredClone(shippedBinding),
      metadata: { name: policyName },
      spec: {
        ...structuredClone(shippedBinding.spec),
        policyName,
        matchResources: { namespaceSelector: { matchLabels: { [SELECTOR]: run } } },
      },
    };

    installed = [binding, policy];
    await applyObjects(kubectl, [policy, binding]);
    // The API server loads policies and bindings through informers: wait until this one answers.
    const probe = env(secretEnv("DB_PASSWORD", "db-admin"));
    let last: Outcome | undefined;
    await eventually(
      "the policy refuses a Secret alice may not get",
      async () => {
        last = await createAsAlice("probe", probe, ["--dry-run=server"]);
        return last.stderr.includes('may not get Secret "db-admin"') ? true : undefined;
      },
      { timeoutMs: 30_000, intervalMs: 200 },
    ).catch((err: unknown) => {
      throw new Error(`the policy never answered: ${last?.stderr ?? ""}`, { cause: err });
    });
  });

  after(async () => {
    await deleteObjects(kubectl, installed).catch(() => undefined);
    await core.deleteNamespace({ name: ns }).catch(() => undefined);
  });

  describe("the shipped objects", () => {
    // As plain JSON: kustomize's objects are read into client-node's classes.
    const plain = (o: unknown): unknown => JSON.parse(JSON.stringify(o));

    test("config/admission: the policy, its allowances first and empty, and a binding for every namespace", () => {
      const kinds = shipped.map((o) => `${o.kind}/${o.metadata.namespace ?? ""}/${o.metadata.name}`).sort();
      assert.deepEqual(kinds, [
        "ValidatingAdmissionPolicy//canaryapp-tenancy",
        "ValidatingAdmissionPolicyBinding//canaryapp-tenancy",
      ]);
      const shippedPolicy = shipped.find((o) => o.kind === "ValidatingAdmissionPolicy") as Policy;
      assert.equal(shippedPolicy.apiVersion, "admissionregistration.k8s.io/v1");
      assert.equal(shippedPolicy.spec.failurePolicy, "Fail");
      assert.equal("paramKind" in (plain(shippedPolicy.spec) as object), false, "no params");
      // First, so that a patch names them by index.
      assert.deepEqual(plain(shippedPolicy.spec.variables?.slice(0, 2)), [
        { name: "allowedHostsText", expression: "''" },
        { name: "allowedGatewaysText", expression: "''" },
      ]);
      // The main resource only: canaryapps/status would be a resource of its own.
      assert.deepEqual(
        plain(shippedPolicy.spec.matchConstraints?.resourceRules?.map((r) => [r.apiGroups, r.operations, r.resources])),
        [[["canaryapp.io"], ["CREATE", "UPDATE"], ["canaryapps"]]],
      );
      const shippedBinding = shipped.find((o) => o.kind === "ValidatingAdmissionPolicyBinding") as Binding;
      assert.deepEqual(plain(shippedBinding.spec), { policyName: SHIPPED, validationActions: ["Deny"] });
    });

    test("the patch config/admission/kustomization.yaml shows widens the allowances, nothing else", async () => {
      // The example in the kustomization's comment, uncommented: from `resources:` to the next empty comment.
      const lines = (await readFile(join(repoRoot, "config", "admission", "kustomization.yaml"), "utf8")).split("\n");
      const start = lines.indexOf("#   resources:");
      assert.notEqual(start, -1, "the kustomization shows a patch");
      const example = lines
        .slice(start, lines.indexOf("#", start))
        .map((l) => l.replace(/^# {3}/, ""))
        .join("\n");
      assert.match(example, /^ {2}- \.\.\/admission$/m);
      const dir = await mkdtemp(join(tmpdir(), "admission-patch-"));
      try {
        // kustomize takes a base outside the kustomization's directory by a relative path only.
        const base = relative(dir, join(repoRoot, "config", "admission"));
        await writeFile(join(dir, "kustomization.yaml"), example.replace("../admission", base));
        const patched = loadAllYaml(await kubectl.run(["kustomize", dir])) as Manifest[];
        const patchedPolicy = plain(patched.find((o) => o.kind === "ValidatingAdmissionPolicy")) as Policy;
        assert.deepEqual(patchedPolicy.spec.variables?.slice(0, 2), [
          { name: "allowedHostsText", expression: "'*.example.com,api.example.org'" },
          { name: "allowedGatewaysText", expression: "'istio-system/public-gw,edge/*'" },
        ]);
        const expected = plain(shipped.find((o) => o.kind === "ValidatingAdmissionPolicy")) as Policy;
        expected.spec.variables?.splice(0, 2, ...(patchedPolicy.spec.variables?.slice(0, 2) ?? []));
        assert.deepEqual(patchedPolicy, expected);
        assert.deepEqual(
          plain(patched.find((o) => o.kind === "ValidatingAdmissionPolicyBinding")),
          plain(shipped.find((o) => o.kind === "ValidatingAdmissionPolicyBinding")),
        );
        // The API server compiles the patched expressions.
        const compiled = { ...patchedPolicy, metadata: { name: `${policyName}-patched` } };
        await kubectl.run(["create", "--dry-run=server", "-f", "-"], JSON.stringify(compiled));
      } finally {
        await rm(dir, { recursive: true, force: true });
      }
    });
  });

  describe("each right alice lacks is refused, naming the field and the right; holding it, she may", () => {
    for (const c of RIGHTS) {
      test(`${c.what}: refused`, async () => {
        assertRefused(await createAsAlice(nextName(), c.spec(ns)), c.refusal(ns));
      });

      test(`${c.what}: accepted with ${c.allow.as}`, async () => {
        const name = nextName();
        if ("grant" in c.allow) {
          await withGrant(`grant-${name}`, c.allow.grant, async () => {
            assertAccepted(await createAsAlice(name, c.spec(ns)));
          });
        } else {
          await setAllowance(c.allow.allowance(ns));
          try {
            assertAccepted(await createAsAlice(name, c.spec(ns)));
          } finally {
            await setAllowance({});
          }
          // With the lists empty again, the same spec is refused again.
          assertRefused(await createAsAlice(nextName(), c.spec(ns), ["--dry-run=server"]), c.refusal(ns));
        }
        const stored = JSON.parse(await kubectl.run(["get", "canaryapp", name, "-n", ns, "-o", "json"])) as {
          metadata: { name: string };
        };
        assert.equal(stored.metadata.name, name);
        await deleteApp(name);
      });
    }

    test("own-namespace hosts in every form, and the mesh, need nothing", async () => {
      const name = nextName();
      assertAccepted(
        await createAsAlice(name, {
          service: {
            hosts: ["web", `web.${ns}`, `web.${ns}.svc`, `web.${ns}.svc.cluster.local`],
            gateways: ["mesh"],
          },
        }),
      );
      await deleteApp(name);
    });

    test("a right to one Secret does not reach another", async () => {
      const spec = env(secretEnv("DB_PASSWORD", "db-admin"), secretEnv("OTHER", "db-other"));
      await withGrant(
        "grant-one-secret",
        { rules: [secretGet("db-admin")], canI: ["get", "secret/db-admin"] },
        async () => {
          assertRefused(
            await createAsAlice(nextName(), spec),
            `spec.pod.env[1].valueFrom.secretKeyRef: user "alice" may not get Secret "db-other" in namespace ${ns}, ` +
              `so a CanaryApp may not hand it to its pods`,
          );
        },
      );
    });

    test("the same Secret named twice is asked about once, at its first field", async () => {
      const spec = {
        pod: {
          env: [secretEnv("A", "db-admin"), secretEnv("B", "db-admin")],
          imagePullSecrets: [{ name: "db-admin" }],
        },
      };
      assertRefused(
        await createAsAlice(nextName(), spec),
        `spec.pod.env[0].valueFrom.secretKeyRef: user "alice" may not get Secret "db-admin" in namespace ${ns}, ` +
          `so a CanaryApp may not hand it to its pods`,
      );
    });
  });

  describe("the cost of the checks stays within the API server's budget", () => {
    // 16 Secrets and ConfigMaps by name, a ServiceAccount, a probe's host, an injector annotation and claim
    // templates: every check the policy makes (21 authorizations).
    const names = {
      secrets: Array.from({ length: 10 }, (_, i) => `s-${i}`),
      configMaps: Array.from({ length: 4 }, (_, i) => `c-${i}`),
      pullSecrets: ["p-0", "p-1"],
    };
    const heaviest: Spec = {
      replicas: 2,
      workload: { kind: "StatefulSet", volumeClaimTemplates: [{ name: "data", mountPath: "/data", storage: "1Gi" }] },
      pod: {
        env: [
          ...names.secrets.map((s, i) => secretEnv(`S${i}`, s)),
          ...names.configMaps.map((c, i) => configMapEnv(`C${i}`, c)),
        ],
        imagePullSecrets: names.pullSecrets.map((name) => ({ name })),
        serviceAccountName: "deployer",
        readinessProbe: { httpGet: { host: "10.0.0.1", path: "/", port: 80 } },
        annotations: { "sidecar.istio.io/userVolume": "[]" },
      },
    };
    const rightsFor = (pullSecrets: string[]): Grant => ({
      rules: [
        secretGet(...names.secrets, ...pullSecrets),
        { apiGroups: [""], resources: ["configmaps"], resourceNames: names.configMaps, verbs: ["get"] },
        { apiGroups: [""], resources: ["serviceaccounts/token"], resourceNames: ["deployer"], verbs: ["create"] },
        { apiGroups: [""], resources: ["pods", "persistentvolumeclaims"], verbs: ["create"] },
      ],
      canI: ["create", "persistentvolumeclaims"],
    });

    test("16 references by name, each held by name, with every other right: accepted", async () => {
      const name = nextName();
      await withGrant("grant-heaviest", rightsFor(names.pullSecrets), async () => {
        assertAccepted(await createAsAlice(name, heaviest));
      });
      await deleteApp(name);
    });

    test("the 16th reference is checked too", async () => {
      await withGrant("grant-all-but-one", rightsFor(["p-0"]), async () => {
        assertRefused(
          await createAsAlice(nextName(), heaviest),
          `spec.pod.imagePullSecrets[1]: user "alice" may not get Secret "p-1" in namespace ${ns}, so a ` +
            `CanaryApp may not hand it to its pods`,
        );
      });
    });

    // The CRD's most: 100 env entries, each a Secret of its own.
    const crowded = env(...Array.from({ length: 100 }, (_, i) => secretEnv(`E${i}`, `e-${i}`)));

    test("more than 16 by name needs get on all Secrets of the namespace: refused without it", async () => {
      await withGrant(
        "grant-each",
        { rules: [secretGet(...Array.from({ length: 100 }, (_, i) => `e-${i}`))], canI: ["get", "secret/e-99"] },
        async () => {
          assertRefused(
            await createAsAlice(nextName(), crowded),
            `spec.pod: names 100 Secrets and ConfigMaps, more than the 16 checked one by one: user "alice" needs ` +
              `get on all Secrets (and on all ConfigMaps, if any is named) in namespace ${ns} to name more`,
          );
        },
      );
    });

    test("…and accepted with it", async () => {
      const name = nextName();
      await withGrant(
        "grant-all-secrets",
        { rules: [{ apiGroups: [""], resources: ["secrets"], verbs: ["get"] }], canI: ["get", "secrets"] },
        async () => {
          assertAccepted(await createAsAlice(name, crowded));
        },
      );
      await deleteApp(name);
    });
  });

  describe("fields the CRD does not have never reach the pods", () => {
    for (const c of UNKNOWN) {
      test(`${c.what}: refused under strict field validation, pruned under the default`, async () => {
        const strict = await createAsAlice(nextName(), c.spec, ["--validate=strict"]);
        assert.notEqual(strict.code, 0, strict.stdout);
        assert.match(
          strict.stderr,
          new RegExp(`strict decoding error: unknown field "${c.field.replaceAll(".", "\\.")}`),
        );

        // Warn is what the API server does when a client asks for nothing.
        const name = nextName();
        const pruned = await createAsAlice(name, c.spec, ["--validate=warn"]);
        assertAccepted(pruned);
        assert.match(pruned.stderr, new RegExp(`Warning: unknown field "${c.field.replaceAll(".", "\\.")}`));
        const stored = JSON.parse(await kubectl.run(["get", "canaryapp", name, "-n", ns, "-o", "json"])) as {
          spec: { pod?: Record<string, unknown> };
        };
        const key = c.field.split(".").at(-1) ?? "";
        assert.equal(key in (stored.spec.pod ?? {}), false, `${c.field} was stored`);
        assert.deepEqual(stored.spec.pod ?? {}, {});
        await deleteApp(name);
      });
    }
  });

  describe("updates: whoever changes what runs or where it is routed holds every right; nothing else is checked", () => {
    const APP = "shared";

    before(async () => {
      // As the namespace's admin, who may get the Secret.
      await kubectl.run(
        ["create", "-n", ns, "-f", "-"],
        canaryApp(APP, { ...env(secretEnv("DB_PASSWORD", "db-admin")), analysis: { stepWeight: 10 } }),
      );
    });

    const patch = (body: unknown, extra: string[] = []) =>
      outcome(kubectl, asAlice(["patch", "canaryapp", APP, "--type=merge", "-p", JSON.stringify(body), ...extra]));

    test("alice may not change the image of an app whose pods get a Secret she may not", async () => {
      assertRefused(
        await patch({ spec: { image: "registry.example.com/shop:v2" } }),
        `spec.pod.env[0].valueFrom.secretKeyRef: user "alice" may not get Secret "db-admin" in namespace ${ns}, ` +
          `so a CanaryApp may not hand it to its pods`,
      );
    });

    test("…nor its pod", async () => {
      assertRefused(
        await patch({ spec: { pod: { labels: { tier: "web" } } } }),
        `spec.pod.env[0].valueFrom.secretKeyRef: user "alice" may not get Secret "db-admin" in namespace ${ns}, ` +
          `so a CanaryApp may not hand it to its pods`,
      );
    });

    test("alice may pause and resume it (annotations), and change its analysis", async () => {
      for (const args of [
        ["annotate", "canaryapp", APP, "canaryapp.io/paused=true"],
        ["annotate", "canaryapp", APP, "canaryapp.io/paused-"],
      ]) {
        const result = await outcome(kubectl, asAlice(args));
        assert.equal(result.code, 0, result.stderr);
      }
      const analysis = await patch({ spec: { analysis: { stepWeight: 20 } } });
      assert.equal(analysis.code, 0, analysis.stderr);
    });

    test("a change of the route checks the route alone", async () => {
      const own = await patch({ spec: { service: { hosts: ["web"] } } });
      assert.equal(own.code, 0, own.stderr);
      assertRefused(
        await patch({ spec: { service: { hosts: ["web", "payments.billing.svc.cluster.local"] } } }),
        hostRefusal(1, "payments.billing.svc.cluster.local", ns),
      );
    });

    test("status is written through the status subresource, unchecked: by the admin and by the controller", async () => {
      const admin = await outcome(kubectl, [
        "patch",
        "canaryapp",
        APP,
        "-n",
        ns,
        "--subresource=status",
        "--type=merge",
        "-p",
        '{"status":{"phase":"Healthy"}}',
      ]);
      assert.equal(admin.code, 0, admin.stderr);

      // The controller's ServiceAccount, with its CanaryApp rights here (config/rbac/role.yaml) and no Secret.
      const controller = "system:serviceaccount:canaryapp-system:canaryapp-controller";
      const role = {
        apiVersion: "rbac.authorization.k8s.io/v1",
        kind: "Role",
        metadata: { name: "controller-canaryapps" },
        rules: [
          { apiGroups: ["canaryapp.io"], resources: ["canaryapps"], verbs: ["get", "list", "watch", "patch"] },
          { apiGroups: ["canaryapp.io"], resources: ["canaryapps/status"], verbs: ["get", "update", "patch"] },
        ],
      };
      await kubectl.run(["apply", "-n", ns, "-f", "-"], JSON.stringify(role));
      await kubectl.run([
        "create",
        "rolebinding",
        "controller-canaryapps",
        "-n",
        ns,
        "--role=controller-canaryapps",
        `--serviceaccount=canaryapp-system:canaryapp-controller`,
      ]);
      const asController = (args: string[]) => outcome(kubectl, [...args, "-n", ns, "--as", controller]);
      await eventually("the controller's rights", async () =>
        (
          await outcome(kubectl, ["auth", "can-i", "patch", "canaryapps", "-n", ns, "--as", controller])
        ).stdout.trim() === "yes"
          ? true
          : undefined,
      );
      await kubectl.run(["annotate", "canaryapp", APP, "-n", ns, "canaryapp.io/promote=now"]);
      for (const args of [
        ["patch", "canaryapp", APP, "--subresource=status", "--type=merge", "-p", '{"status":{"phase":"Progressing"}}'],
        // Consuming a manual control: the annotation's removal.
        ["annotate", "canaryapp", APP, "canaryapp.io/promote-"],
        ["patch", "canaryapp", APP, "--type=merge", "-p", '{"metadata":{"finalizers":["canaryapp.io/cleanup"]}}'],
        ["patch", "canaryapp", APP, "--type=merge", "-p", '{"metadata":{"finalizers":null}}'],
      ]) {
        const result = await asController(args);
        assert.equal(result.code, 0, `${args.join(" ")}: ${result.stderr}`);
      }
      const stored = JSON.parse(await kubectl.run(["get", "canaryapp", APP, "-n", ns, "-o", "json"])) as {
        metadata: { annotations?: Record<string, string> };
        status?: { phase?: string };
      };
      assert.equal(stored.status?.phase, "Progressing");
      assert.equal(stored.metadata.annotations?.["canaryapp.io/promote"], undefined);
    });
  });
});

/**
 * The k3d path (e2e/k3d/) needs Docker, k3d and istioctl, which this machine need not have, so it is checked
 * here as far as it can be without them: the scripts parse (bash -n) and pass shellcheck (which `make deps`
 * installs); their settings agree with the manifests, the sample app and config/default; and every manifest
 * they apply from this repository passes a server-side dry run against the local control plane (schema,
 * CEL rules and admission of the real API server, with Istio's CRDs installed). Istio itself and its
 * Prometheus addon come from Istio's release and are not checked.
 *
 * Runs under `make test-e2e` (KUBECONFIG set by e2e/cluster/with-cluster).
 */
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { readFile } from "node:fs/promises";
import { join } from "node:path";
import { after, describe, test } from "node:test";
import { promisify } from "node:util";
import { CoreV1Api, loadAllYaml } from "@kubernetes/client-node";
import { loadKubeConfig } from "../src/kube/client.js";
import type { CanaryApp } from "../src/api/types.js";
import { statusCodeOf } from "../src/kube/errors.js";
import { findRepoRoot } from "./cluster/toolchain.js";
import { waitFor } from "./cluster/wait.js";
import { Kubectl, toolchainKubectl } from "./demo/kubectl.js";
import { readSample } from "./demo/story.js";

const kubeconfig = process.env["KUBECONFIG"];
if (!kubeconfig) throw new Error("KUBECONFIG is not set: run these tests with `make test-e2e`");
const kc = loadKubeConfig(kubeconfig);
const core = kc.makeApiClient(CoreV1Api);
const kubectl = new Kubectl(toolchainKubectl(), kubeconfig);
const repoRoot = findRepoRoot();
const k3dDir = join(repoRoot, "e2e", "k3d");
const SCRIPTS = ["lib.sh", "up.sh", "story.sh", "down.sh"];
const run = promisify(execFile);

interface Manifest {
  apiVersion: string;
  kind: string;
  metadata: { name: string; namespace?: string; labels?: Record<string, string> };
  spec?: Record<string, unknown>;
}

/** The settings lib.sh defines, as the scripts see them. */
async function settings(): Promise<Record<string, string>> {
  const names = ["CLUSTER", "LB_PORT", "NAMESPACE", "APP", "APP_HOST", "SAMPLE_IMAGE", "CONTROLLER_IMAGE"];
  const script = `source ${JSON.stringify(join(k3dDir, "lib.sh"))}; printf '%s\\n' ${names.map((n) => `"$${n}"`).join(" ")} "\${VERSIONS[*]}"`;
  const { stdout } = await run("bash", ["-c", script]);
  const values = stdout.split("\n");
  return Object.fromEntries([...names, "VERSIONS"].map((n, i) => [n, values[i] ?? ""]));
}

async function yamlFile(path: string): Promise<Manifest[]> {
  return loadAllYaml(await readFile(path, "utf8")) as Manifest[];
}

/** Namespaces this file created for the dry runs, deleted afterwards. */
const created: string[] = [];

/** Creates a namespace unless it exists; one still Terminating from an earlier test is waited out first. */
async function ensureNamespace(name: string): Promise<void> {
  await waitFor(
    `Namespace ${name}: not Terminating`,
    async () => {
      try {
        const ns = await core.readNamespace({ name });
        return ns.status?.phase === "Terminating" ? undefined : true;
      } catch (err) {
        if (statusCodeOf(err) === 404) return true;
        throw err;
      }
    },
    { timeoutMs: 60_000, intervalMs: 250 },
  );
  try {
    await core.createNamespace({ body: { metadata: { name } } });
    created.push(name);
  } catch (err) {
    if (statusCodeOf(err) !== 409) throw err;
  }
}

after(async () => {
  // Gone before the next test file may apply into a namespace of the same name.
  for (const name of created) await core.deleteNamespace({ name }).catch(() => undefined);
  for (const name of created) {
    await waitFor(
      `Namespace ${name}: deleted`,
      () =>
        core.readNamespace({ name }).then(
          () => undefined,
          (err: unknown) => (statusCodeOf(err) === 404 ? true : undefined),
        ),
      { timeoutMs: 60_000, intervalMs: 250 },
    );
  }
});

describe("e2e/k3d: the path for users with Docker", () => {
  test("the scripts parse and pass shellcheck", async () => {
    for (const script of SCRIPTS) {
      await run("bash", ["-n", join(k3dDir, script)]);
    }
    // `make deps` installs shellcheck; without it this check fails rather than passing on less.
    const shellcheck = await run("bash", ["-c", "command -v shellcheck"]).then(
      ({ stdout }) => stdout.trim(),
      () => assert.fail("shellcheck is not installed: run `make deps` (apt-get install shellcheck)"),
    );
    // -x follows `source lib.sh`; a finding fails the run with shellcheck's report.
    await run(shellcheck, ["-x", ...SCRIPTS], { cwd: k3dDir }).catch((err: Error & { stdout?: string }) => {
      assert.fail(`shellcheck:\n${err.stdout ?? err.message}`);
    });
    const { stdout } = await run(shellcheck, ["--version"]);
    console.log(`# ${stdout.split("\n").find((l) => l.startsWith("version")) ?? "shellcheck"}: no findings`);
  });

  test("up.sh applies e2e/k3d/controller, e2e/k3d/manifests/, e2e/k3d/sample and Istio's Prometheus addon, nothing else", async () => {
    const up = await readFile(join(k3dDir, "up.sh"), "utf8");
    const applied = [...up.matchAll(/^\s*(?:run )?kubectl (?:kustomize (\S+) \| kubectl apply|apply -f (\S+))/gm)].map(
      (m) => m[1] ?? m[2],
    );
    assert.deepEqual(applied.sort(), [
      '"$PROMETHEUS_ADDON"',
      "e2e/k3d/controller",
      "e2e/k3d/manifests/",
      "e2e/k3d/sample",
    ]);
    const story = await readFile(join(k3dDir, "story.sh"), "utf8");
    assert.doesNotMatch(story, /kubectl (apply|create|replace)/, "story.sh changes the app only with kubectl patch");
  });

  test("lib.sh agrees with the manifests, the sample app's image and config/default", async () => {
    const s = await settings();
    assert.equal(s["LB_PORT"], "8090");
    assert.deepEqual(s["VERSIONS"]?.split(" "), ["v1", "v2", "v3"]);

    const [namespace] = await yamlFile(join(k3dDir, "manifests", "namespace.yaml"));
    assert.ok(namespace);
    assert.equal(namespace.metadata.name, s["NAMESPACE"]);
    assert.equal(namespace.metadata.labels?.["istio-injection"], "enabled");

    const [gateway] = await yamlFile(join(k3dDir, "manifests", "gateway.yaml"));
    assert.ok(gateway);
    assert.equal(gateway.kind, "Gateway");
    const servers = (gateway.spec?.["servers"] ?? []) as { port: { number: number }; hosts: string[] }[];
    assert.deepEqual(
      servers.map((server) => server.port.number),
      [80],
      "k3d's load balancer forwards to port 80",
    );
    assert.ok(servers[0]?.hosts.includes(s["APP_HOST"] ?? ""), "the Gateway accepts the sample's host");

    const [sample] = loadAllYaml(await kubectl.run(["kustomize", join(k3dDir, "sample")])) as CanaryApp[];
    const seed = await readSample();
    assert.ok(sample);
    assert.equal(sample.metadata.namespace, s["NAMESPACE"]);
    assert.equal(sample.metadata.name, s["APP"]);
    assert.equal(sample.metadata.name, seed.metadata.name);
    assert.equal(sample.spec.image, `${s["SAMPLE_IMAGE"]}:v1`);
    const dockerfile = await readFile(join(repoRoot, "examples", "sample-app", "Dockerfile"), "utf8");
    assert.equal(String(sample.spec.imageListenPort), /\bPORT=(\d+)/.exec(dockerfile)?.[1], "the sample app's PORT");
    assert.deepEqual(sample.spec.service?.hosts, [s["APP_HOST"]]);
    assert.deepEqual(sample.spec.service?.gateways, [`${gateway.metadata.namespace}/${gateway.metadata.name}`]);
    // The sample's fields, and its query unchanged: its window is the step's, long enough for 15 s scrapes.
    assert.equal(sample.spec.replicas, seed.spec.replicas);
    assert.equal(sample.spec.testReplicas, seed.spec.testReplicas);
    assert.equal(sample.spec.prometheusURL, seed.spec.prometheusURL);
    assert.equal(sample.spec.prometheusQuery, seed.spec.prometheusQuery);
    assert.match(sample.spec.prometheusQuery ?? "", /\[\{\{stepWindow\}\}\]/);

    const system = loadAllYaml(await kubectl.run(["kustomize", join(k3dDir, "controller")])) as Manifest[];
    // The sample's host and Gateway are allowed, in the controller's flags and the admission policy alike.
    const policy = system.find((o) => o.kind === "ValidatingAdmissionPolicy") as
      { spec: { variables: { name: string; expression: string }[] } } | undefined;
    assert.deepEqual(
      policy?.spec.variables.slice(0, 2).map((v) => [v.name, v.expression]),
      [
        ["allowedHostsText", `'${s["APP_HOST"] ?? ""}'`],
        ["allowedGatewaysText", `'${gateway.metadata.namespace}/${gateway.metadata.name}'`],
      ],
    );
    const deployment = system.find((o) => o.kind === "Deployment") as
      | { spec: { template: { spec: { containers: { image: string; env?: { name: string; value?: string }[] }[] } } } }
      | undefined;
    const container = deployment?.spec.template.spec.containers[0];
    assert.ok(container);
    assert.equal(container.image, s["CONTROLLER_IMAGE"], "up.sh builds and imports the image config/default runs");
    assert.equal(container.env?.find((e) => e.name === "ALLOWED_HOSTS")?.value, s["APP_HOST"]);
    assert.equal(
      container.env?.find((e) => e.name === "ALLOWED_GATEWAYS")?.value,
      `${gateway.metadata.namespace}/${gateway.metadata.name}`,
    );
    assert.equal(
      container.env?.find((e) => e.name === "PROMETHEUS_URL")?.value,
      seed.spec.prometheusURL,
      "the controller's default Prometheus is the addon's",
    );
  });

  test("every manifest up.sh applies from this repository passes a server-side dry run", async () => {
    const s = await settings();
    // A dry run cannot create a namespace for the objects in it, so the namespaces are made for real.
    for (const name of ["canaryapp-system", s["NAMESPACE"] ?? "", "istio-system"]) await ensureNamespace(name);

    const checks = [
      "kubectl kustomize e2e/k3d/controller | kubectl apply --server-side --dry-run=server -f -",
      "kubectl apply --dry-run=server -f e2e/k3d/manifests/",
      "kubectl kustomize e2e/k3d/sample | kubectl apply --dry-run=server -f -",
    ];
    let objects = 0;
    for (const command of checks) {
      const output = await kubectl.shell(command, repoRoot);
      const lines = output.trim().split("\n");
      for (const line of lines) assert.match(line, /\(server dry run\)$/, `${command}:\n${output}`);
      objects += lines.length;
    }
    assert.equal(objects, 12 + 2 + 1, "config/default's 12 objects, the namespace and Gateway, the CanaryApp");
    console.log(`# ${objects} objects accepted by the API server (dry run)`);

    // The API server's validation is really applied: the sample with a bad field is refused.
    const bad = (await kubectl.run(["kustomize", join(k3dDir, "sample")])).replace(
      "imageListenPort: 8080",
      "imageListenPort: 0",
    );
    await assert.rejects(kubectl.run(["apply", "--dry-run=server", "-f", "-"], bad), /imageListenPort/);
  });
});

/**
 * examples/limited-user on a real API server: the Role is applied as a namespace admin would, then the
 * README's "Using it" one-liners are run as that user with the real kubectl (`--as alice`), exactly as the
 * README prints them (NAME and the image filled in), and everything else a tenant might try is refused.
 */
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { readFile } from "node:fs/promises";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { CoreV1Api } from "@kubernetes/client-node";
import { findRepoRoot } from "../../e2e/cluster/toolchain.js";
import { Kubectl, KubectlError, toolchainKubectl } from "../../e2e/demo/kubectl.js";
import { createTestNamespace, testKubeConfig, testKubeConfigPath } from "../support/kube.js";
import { grantedRights } from "../support/rbac.js";

const repoRoot = findRepoRoot();
const USER = "alice";
const APP = "shop";

/** The kubectl commands of the README's "Using it" table (its rows, not the sections below it), in order. */
async function readmeOneLiners(): Promise<string[]> {
  const readme = await readFile(join(repoRoot, "README.md"), "utf8");
  const section = /^## Using it\n([\s\S]*?)^## /m.exec(readme)?.[1] ?? "";
  const table = section
    .split("\n")
    .filter((line) => line.startsWith("|"))
    .join("\n");
  return [...table.matchAll(/`(kubectl [^`]+)`/g)].map((m) => m[1] ?? "");
}

/** A one-liner's words, with NAME and the example images made concrete. */
function words(line: string): string[] {
  return line
    .replaceAll("NAME", APP)
    .replaceAll("repo/app:", "registry.example.com/shop:")
    .split(" ")
    .map((w) => w.replace(/^'(.*)'$/, "$1"));
}

/** Runs `args` as the user, watching for at most `ms` (for `-w`): resolves with stdout. */
function runWatching(kubectl: Kubectl, args: string[], ms: number): Promise<{ stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(kubectl.binary, args, { env: kubectl.env() });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (c: Buffer) => (stdout += c.toString()));
    child.stderr.on("data", (c: Buffer) => (stderr += c.toString()));
    const timer = setTimeout(() => child.kill("SIGTERM"), ms);
    child.once("error", reject);
    child.once("close", () => {
      clearTimeout(timer);
      resolve({ stdout, stderr });
    });
  });
}

describe("examples/limited-user", () => {
  const kc = testKubeConfig();
  const core = kc.makeApiClient(CoreV1Api);
  let kubectl: Kubectl;
  let namespace: string;
  let elsewhere: string;
  const as = (args: string[]) => [...args, "-n", namespace, "--as", USER];

  before(async () => {
    kubectl = new Kubectl(toolchainKubectl(), testKubeConfigPath());
    namespace = await createTestNamespace(kc, "limited");
    elsewhere = await createTestNamespace(kc, "limited-other");
    // As the namespace's admin: the Role and its binding, and a Secret and Deployment the user must not touch.
    await kubectl.run(["apply", "-n", namespace, "-f", join(repoRoot, "examples", "limited-user", "role.yaml")]);
    await core.createNamespacedSecret({
      namespace,
      body: { metadata: { name: "db-password" }, stringData: { password: "hunter2" } },
    });
    await kubectl.run(["create", "deployment", "web", "-n", namespace, "--image=registry.example.com/web:v1"]);
  });
  after(async () => {
    await core.deleteNamespace({ name: namespace }).catch(() => undefined);
    await core.deleteNamespace({ name: elsewhere }).catch(() => undefined);
  });

  test('the user creates a CanaryApp and runs every one-liner of the README\'s "Using it"', async () => {
    const app = {
      apiVersion: "canaryapp.io/v1alpha1",
      kind: "CanaryApp",
      metadata: { name: APP },
      spec: { image: "registry.example.com/shop:v1", imageListenPort: 8080, replicas: 1, testReplicas: 1 },
    };
    await kubectl.run(as(["create", "-f", "-"]), JSON.stringify(app));

    const lines = await readmeOneLiners();
    assert.ok(lines.length >= 8, `found ${lines.length} one-liners in the README`);
    const ran: string[] = [];
    for (const line of lines) {
      const args = as(words(line).slice(1));
      if (args.includes("-w")) {
        const { stdout, stderr } = await runWatching(kubectl, args, 2_000);
        assert.match(stdout, new RegExp(`^${APP}\\b`, "m"), `${line}: ${stderr}`);
        assert.doesNotMatch(stderr, /forbidden/i, line);
      } else {
        const out = await kubectl.run(args).catch((err: unknown) => {
          throw new Error(`${line} was refused to ${USER}`, { cause: err });
        });
        if (args[0] === "describe") assert.match(out, /^Name:\s+shop$/m, line);
      }
      ran.push(line);
    }
    assert.deepEqual(ran, lines);
    const annotations = JSON.parse(await kubectl.run(as(["get", "canaryapp", APP, "-o", "json"]))) as {
      metadata: { annotations?: Record<string, string> };
      spec: { image: string };
    };
    assert.equal(annotations.spec.image, "registry.example.com/shop:v2", "the patch took effect");
    assert.equal(annotations.metadata.annotations?.["canaryapp.io/retry"], "registry.example.com/shop:v3");
    // Status and Events are readable.
    await kubectl.run(as(["get", "canaryapp", APP, "-o", "jsonpath={.status}"]));
    await kubectl.run(as(["get", "events"]));
    await kubectl.run(as(["get", "events.events.k8s.io"]));
  });

  const refused: [string, string[]][] = [
    ["read a Secret", ["get", "secret", "db-password"]],
    ["list Secrets", ["get", "secrets"]],
    ["edit the Deployments the controller owns", ["scale", "deployment", "web", "--replicas=3"]],
    ["create a Deployment", ["create", "deployment", "x", "--image=registry.example.com/x:v1"]],
    ["delete a CanaryApp", ["delete", "canaryapp", APP]],
    [
      "write a CanaryApp's status",
      ["patch", "canaryapp", APP, "--subresource=status", "--type=merge", "-p", '{"status":{"phase":"Healthy"}}'],
    ],
    ["read Services", ["get", "services"]],
    ["create a RoleBinding", ["create", "rolebinding", "x", "--clusterrole=admin", `--user=${USER}`]],
    ["touch Istio routes", ["get", "virtualservices.networking.istio.io"]],
  ];
  for (const [what, args] of refused) {
    test(`the user may not ${what}`, async () => {
      await assert.rejects(kubectl.run(as(args)), (err: unknown) => {
        assert.ok(err instanceof KubectlError, String(err));
        assert.match(err.stderr, /forbidden/i);
        assert.match(err.stderr, new RegExp(`User "${USER}" cannot`));
        return true;
      });
    });
  }

  test("the user has no rights in another namespace", async () => {
    await assert.rejects(kubectl.run(["get", "canaryapps", "-n", elsewhere, "--as", USER]), /forbidden/i);
  });

  test("what the user may do is exactly the Role: kubectl auth can-i --list", async () => {
    assert.deepEqual(await grantedRights(kubectl, USER, namespace), [
      "canaryapps.canaryapp.io [get list watch create patch]",
      "canaryapps.canaryapp.io/status [get]",
      "events [get list watch]",
      "events.events.k8s.io [get list watch]",
    ]);
    assert.deepEqual(await grantedRights(kubectl, USER, elsewhere), []);
  });
});

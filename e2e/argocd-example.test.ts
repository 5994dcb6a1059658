/**
 * examples/argocd-app as Argo CD would run it, on the real API server with the real controller: releases
 * arrive as "commits" of the app folder (server-side applied, as Argo CD syncs with ServerSideApply=true),
 * the manual controls go through `kubectl canaryapp`, and after every step a server-side diff of the
 * manifests against the live object — what Argo CD compares — is empty. Also: the argocd-cm snippet
 * installs into a ConfigMap with the README's command.
 */
import assert from "node:assert/strict";
import { cpSync, mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { ApiextensionsV1Api, CoreV1Api, loadYaml } from "@kubernetes/client-node";
import { findRepoRoot } from "./cluster/toolchain.js";
import { ANNOTATIONS, type CanaryApp } from "../src/api/types.js";
import { runController, type TestController } from "../test/support/controller.js";
import { eventually, testKubeConfig } from "../test/support/kube.js";
import { Kubectl, linkPlugin } from "../test/support/kubectl.js";
import { startRolloutEnv, type RolloutEnv } from "../test/support/rollout-env.js";
import { RolloutRecorder } from "../test/support/rollout-recorder.js";

const ROOT = findRepoRoot();
/** The folder the example's Application syncs, relative to the repository root (as the README runs it). */
const APP_DIR = "examples/argocd-app/app";
const NAME = "shop";

describe("examples/argocd-app: zero drift through promote, rollback and the manual controls", () => {
  let env: RolloutEnv;
  let controller: TestController;
  let kubectl: Kubectl;
  let recorder: RolloutRecorder;
  /** The Git working copy for releases other than the one committed in the repository. */
  let workingCopy: string;
  /** The image the example folder deploys. */
  let committedImage: string;

  /** kubectl diff's external diff program: the comparison Argo CD makes (test/support/argocd-diff.ts). */
  let argocdDiff: NodeJS.ProcessEnv;
  const ns = () => ["-n", env.namespace];
  const run = (args: string[]) => kubectl.run(args, { timeoutMs: 90_000 });
  /**
   * `kubectl diff --server-side -f DIR` compared as Argo CD compares (without status and resourceVersion,
   * test/support/argocd-diff.ts): exit 0 and no output when the live object matches.
   */
  async function assertNoDrift(dir: string, when: string): Promise<void> {
    const diff = await kubectl.run(["diff", "--server-side", "-f", dir, ...ns()], { env: argocdDiff });
    assert.equal(diff.code, 0, `drift ${when}:\n${diff.stdout}${diff.stderr}`);
    assert.equal(diff.stdout, "", when);
  }
  /** A commit of the app folder with another image: written to the working copy, which is returned. */
  function commit(image: string): string {
    const file = join(workingCopy, "canaryapp.yaml");
    writeFileSync(file, readFileSync(join(ROOT, APP_DIR, "canaryapp.yaml"), "utf8").replace(committedImage, image));
    return workingCopy;
  }
  async function sync(dir: string): Promise<CanaryApp> {
    const applied = await run(["apply", "--server-side", "-f", dir, ...ns()]);
    assert.equal(applied.code, 0, applied.stderr);
    return env.apps.get(NAME);
  }
  const plugin = (...args: string[]) => run(["canaryapp", ...args, ...ns()]);
  const phase = (p: string) =>
    recorder.until(`phase ${p}`, (r) => (r.app?.status?.phase === p ? structuredClone(r.app) : undefined), 60_000);

  before(async () => {
    env = await startRolloutEnv("argocd-example", { controller: false });
    // The example names no Prometheus: it uses the controller's default, as a cluster-wide install would.
    controller = runController(env.namespace, [`--prometheus-url=${env.prometheus.url}`]);
    kubectl = new Kubectl(linkPlugin());
    workingCopy = mkdtempSync(join(tmpdir(), "argocd-app-"));
    // kubectl runs KUBECTL_EXTERNAL_DIFF with flags only, so the script is wrapped in an executable of its own.
    const differ = join(mkdtempSync(join(tmpdir(), "argocd-diff-")), "argocd-diff");
    const script = join(ROOT, "dist/test/support/argocd-diff.js");
    writeFileSync(differ, `#!/bin/sh\nexec '${process.execPath}' '${script}' "$@"\n`, { mode: 0o755 });
    argocdDiff = { KUBECTL_EXTERNAL_DIFF: differ };
    cpSync(join(ROOT, APP_DIR), workingCopy, { recursive: true });
    committedImage = loadYaml<CanaryApp>(readFileSync(join(ROOT, APP_DIR, "canaryapp.yaml"), "utf8")).spec.image;
    recorder = await RolloutRecorder.start(env.kc, env.namespace, NAME);
    env.recorders.push(recorder);
  });
  after(async () => {
    await controller.stop();
    await env.stop();
  });

  test("the AppProject allows only the app's namespace; the Application syncs the app folder", () => {
    const project = loadYaml<{ spec: Record<string, unknown> }>(
      readFileSync(join(ROOT, "examples/argocd-app/project.yaml"), "utf8"),
    );
    const app = loadYaml<{
      spec: { project: string; source: { path: string }; destination: { namespace: string } };
    }>(readFileSync(join(ROOT, "examples/argocd-app/application.yaml"), "utf8"));
    assert.deepEqual(project.spec["destinations"], [{ server: "https://kubernetes.default.svc", namespace: "shop" }]);
    assert.deepEqual(project.spec["clusterResourceWhitelist"], []);
    assert.deepEqual(project.spec["namespaceResourceWhitelist"], [{ group: "canaryapp.io", kind: "CanaryApp" }]);
    assert.equal(app.spec.project, "shop");
    assert.equal(app.spec.source.path, APP_DIR);
    assert.equal(app.spec.destination.namespace, "shop");
  });

  test("first sync: v1 becomes healthy, no drift", { timeout: 90_000 }, async () => {
    await sync(commit("sample-app:v1"));
    const wait = await plugin("wait", NAME, "--for=healthy", "--timeout=60s");
    assert.equal(wait.code, 0, wait.stderr);
    await assertNoDrift(workingCopy, "after the first sync");
  });

  test(
    "the committed release, paused, resumed and promoted by hand: no drift at any point",
    { timeout: 90_000 },
    async () => {
      await sync(APP_DIR);
      assert.equal((await plugin("pause", NAME)).code, 0);
      const paused = await phase("Paused");
      assert.equal(paused.spec.image, committedImage);
      await assertNoDrift(APP_DIR, "while paused");

      assert.equal((await plugin("resume", NAME)).code, 0);
      await phase("Progressing");
      await assertNoDrift(APP_DIR, "after resume");

      assert.equal((await plugin("promote", NAME)).code, 0);
      const wait = await plugin("wait", NAME, "--for=healthy", "--timeout=60s");
      assert.equal(wait.code, 0, wait.stderr);
      const app = await env.apps.get(NAME);
      assert.equal(app.status?.primaryImage, committedImage);
      assert.equal(app.metadata.annotations?.[ANNOTATIONS.promote], undefined, "the controller removed promote");
      await assertNoDrift(APP_DIR, "after the promotion");
    },
  );

  test("a bad release aborted, retried and aborted again: rolled back, no drift", { timeout: 120_000 }, async () => {
    await sync(commit("sample-app:v3"));
    await recorder.until("a test of v3", (r) => (r.app?.status?.canary?.image === "sample-app:v3" ? true : undefined));
    assert.equal((await plugin("abort", NAME)).code, 0);
    const wait = await plugin("wait", NAME, "--for=healthy", "--timeout=60s");
    assert.equal(wait.code, 2, wait.stderr);
    assert.match(wait.stderr, /will not become healthy: sample-app:v3 failed at \S+: Aborted/);
    await assertNoDrift(workingCopy, "after the rollback");

    assert.equal((await plugin("retry", NAME)).code, 0);
    await recorder.until("v3 tested again", (r) =>
      r.app?.status?.canary?.image === "sample-app:v3" && r.app.status.phase === "Progressing" ? true : undefined,
    );
    await assertNoDrift(workingCopy, "during the retry");
    assert.equal((await plugin("abort", NAME)).code, 0);
    const failed = await plugin("wait", NAME, "--for=failed", "--timeout=60s");
    assert.equal(failed.code, 0, failed.stderr);
    const app = await env.apps.get(NAME);
    assert.equal(app.status?.primaryImage, committedImage, "the primary kept the committed release");
    assert.deepEqual(Object.keys(app.metadata.annotations ?? {}), [], "every control annotation is gone");
    await assertNoDrift(workingCopy, "after the second rollback");

    const history = await plugin("history", NAME);
    assert.match(history.stdout.split("\n")[1] ?? "", /^sample-app:v3 +\S+ +Aborted/);
  });

  test(
    "reverting the commit: the committed release again, healthy, and the folder has no drift",
    { timeout: 90_000 },
    async () => {
      await sync(APP_DIR);
      const wait = await plugin("wait", NAME, "--for=healthy", "--timeout=60s");
      assert.equal(wait.code, 0, wait.stderr);
      await assertNoDrift(APP_DIR, "at the end of the story");
    },
  );

  test(
    "the diff does see a change made outside Git (spec.image set by hand), until the next sync",
    { timeout: 90_000 },
    async () => {
      assert.equal((await plugin("set", "image", NAME, "sample-app:v4")).code, 0);
      // The hand-made patch took spec.image's ownership; Argo CD diffs and syncs with --force-conflicts,
      // as Git wins over changes made by hand.
      // The same comparison as assertNoDrift's: it sees a change of the spec.
      const diff = await kubectl.run(["diff", "--server-side", "--force-conflicts", "-f", APP_DIR, ...ns()], {
        env: argocdDiff,
      });
      assert.equal(diff.code, 1, diff.stderr);
      assert.match(diff.stdout, /^- {2}image: sample-app:v4$/m);
      assert.match(diff.stdout, new RegExp(`^\\+  image: ${committedImage}$`, "m"));

      const synced = await run(["apply", "--server-side", "--force-conflicts", "-f", APP_DIR, ...ns()]);
      assert.equal(synced.code, 0, synced.stderr);
      const wait = await plugin("wait", NAME, "--for=healthy", "--timeout=60s");
      assert.equal(wait.code, 0, wait.stderr);
      await assertNoDrift(APP_DIR, "after the next sync");
    },
  );
});

describe("integrations/argocd/argocd-cm.yaml", () => {
  test("merges into argocd-cm with the README's command", { timeout: 60_000 }, async () => {
    const kubectl = new Kubectl(linkPlugin());
    const core = testKubeConfig().makeApiClient(CoreV1Api);
    await core.createNamespace({ body: { metadata: { name: "argocd" } } }).catch(() => undefined);
    await core.createNamespacedConfigMap({
      namespace: "argocd",
      body: { metadata: { name: "argocd-cm" }, data: { url: "https://argocd.example.com" } },
    });
    const r = await kubectl.run([
      "-n",
      "argocd",
      "patch",
      "configmap",
      "argocd-cm",
      "--type",
      "merge",
      "--patch-file",
      "integrations/argocd/argocd-cm.yaml",
    ]);
    assert.equal(r.code, 0, r.stderr);
    const cm = await core.readNamespacedConfigMap({ namespace: "argocd", name: "argocd-cm" });
    assert.equal(cm.data?.["url"], "https://argocd.example.com", "the existing settings stay");
    const dir = join(ROOT, "integrations/argocd/resource_customizations/canaryapp.io/CanaryApp");
    assert.equal(
      cm.data?.["resource.customizations.health.canaryapp.io_CanaryApp"],
      readFileSync(join(dir, "health.lua"), "utf8"),
    );
    assert.match(cm.data?.["resource.customizations.actions.canaryapp.io_CanaryApp"] ?? "", /- name: resume/);
  });

  test("the AppProject and Application apply with the README's command", { timeout: 60_000 }, async () => {
    // Stand-ins for Argo CD's CRDs (no Argo CD here): they accept any spec, so this checks the command
    // and that the files are well-formed objects of the right kinds, not Argo CD's own validation.
    const kc = testKubeConfig();
    const extensions = kc.makeApiClient(ApiextensionsV1Api);
    for (const [kind, plural] of [
      ["AppProject", "appprojects"],
      ["Application", "applications"],
    ] as const) {
      await extensions.createCustomResourceDefinition({
        body: {
          metadata: { name: `${plural}.argoproj.io` },
          spec: {
            group: "argoproj.io",
            scope: "Namespaced",
            names: { kind, plural, singular: kind.toLowerCase(), listKind: `${kind}List` },
            versions: [
              {
                name: "v1alpha1",
                served: true,
                storage: true,
                schema: { openAPIV3Schema: { type: "object", x_kubernetes_preserve_unknown_fields: true } },
              },
            ],
          },
        },
      });
      await eventually(`${plural}.argoproj.io established`, async () => {
        const crd = await extensions.readCustomResourceDefinition({ name: `${plural}.argoproj.io` });
        return crd.status?.conditions?.some((c) => c.type === "Established" && c.status === "True") ? true : undefined;
      });
    }
    const kubectl = new Kubectl(linkPlugin());
    const r = await kubectl.run([
      "apply",
      "-n",
      "argocd",
      "-f",
      "examples/argocd-app/project.yaml",
      "-f",
      "examples/argocd-app/application.yaml",
    ]);
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, /^appproject.argoproj.io\/shop created$/m);
    assert.match(r.stdout, /^application.argoproj.io\/shop created$/m);
    for (const plural of ["appprojects", "applications"]) {
      await extensions.deleteCustomResourceDefinition({ name: `${plural}.argoproj.io` });
    }
  });
});

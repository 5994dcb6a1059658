/**
 * The demo's story as end-to-end tests, on the cluster profile (kwok nodes, garbage collector) with the
 * mesh traffic simulator and a real Prometheus; the controller runs as its own process under the
 * ServiceAccount and RBAC that config/default installs, so the story also proves those permissions suffice.
 *
 * - config/default applies cleanly with server-side apply (dry run, then for real), and its controller
 *   Deployment rolls out;
 * - the story (e2e/demo/story.ts, the same code `make demo` runs): v2's weight climbs 10..50 then returns
 *   to 0 and v2 is promoted; v3 is caught, rolled back and recorded in status.failedImages; the Events tell it;
 * - Prometheus saw requests on the secondary workload only while the route gave it weight, in proportion
 *   to that weight;
 * - Istio's analyzers (`istioctl analyze`) find no error in the namespace the story ends with, and no warning
 *   that is not explained here;
 * - deleting the CanaryApp removes its children (garbage collection through owner references).
 *
 * Runs under `make test-e2e` (KUBECONFIG set by e2e/cluster/with-cluster).
 */
import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { setTimeout as sleep } from "node:timers/promises";
import { AppsV1Api, CoreV1Api, CustomObjectsApi, loadAllYaml, dumpYaml } from "@kubernetes/client-node";
import type { CanaryApp } from "../src/api/types.js";
import { statusCodeOf } from "../src/kube/errors.js";
import { destinationTrack, ISTIO_NETWORKING } from "../src/router/istio.js";
import { childNames } from "../src/api/meta.js";
import { pinImage } from "../src/identity/image-ref.js";
import { fakeDigest } from "./cluster/fake-nodes.js";
import { findRepoRoot } from "./cluster/toolchain.js";
import { assertAnalyzeClean, istioAnalyze, printAnalyzeReport } from "./istioctl.js";
import { waitFor } from "./cluster/wait.js";
import {
  notTerminating,
  SERVICE_ACCOUNT,
  serviceAccountKubeconfig,
  SYSTEM_NAMESPACE,
} from "../test/support/installed-controller.js";
import { startEnvironment, type Environment } from "./demo/environment.js";
import { Kubectl, toolchainKubectl } from "./demo/kubectl.js";
import { StoryRecorder } from "./demo/recorder.js";
import { readSample, retryFailed, runStory, trafficChecks, type Retried, type StoryResult } from "./demo/story.js";
import { totalBad } from "./sim/ledger.js";
import { SOURCE_WORKLOAD } from "./sim/telemetry.js";
import {
  innerWindows,
  scrapeDeltas,
  unexplainedSecondaryTraffic,
  weightSegments,
  type MatrixSeries,
} from "./demo/traffic.js";
import { testKubeConfig, testKubeConfigPath } from "../test/support/kube.js";

const kubeconfig = testKubeConfigPath();
const kc = testKubeConfig();
const core = kc.makeApiClient(CoreV1Api);
const apps = kc.makeApiClient(AppsV1Api);
const custom = kc.makeApiClient(CustomObjectsApi);
const kubectl = new Kubectl(toolchainKubectl(), kubeconfig);
const repoRoot = findRepoRoot();

const namespace = `story-${randomBytes(3).toString("hex")}`;
/** More than the demo's 20/s, so that a few seconds at one weight hold enough requests to measure a share. */
const RPS = 50;
const KUSTOMIZE_APPLY = "kubectl kustomize config/default | kubectl apply --server-side -f -";
/** The warnings `istioctl analyze` gives on the story's namespace, and why each is expected on this cluster. */
const ANALYZE_EXPLAINED: Record<string, string> = {};

/** The objects config/default makes, as its kustomize output lists them. */
async function kustomizeObjects(): Promise<{ kind: string; metadata: { name: string; namespace?: string } }[]> {
  const text = await kubectl.run(["kustomize", join(repoRoot, "config", "default")]);
  return loadAllYaml(text) as { kind: string; metadata: { name: string; namespace?: string } }[];
}

/** A Prometheus query at `time` (unix seconds; now when absent). */
async function promQuery<T>(url: string, query: string, time?: number): Promise<T> {
  const params = new URLSearchParams({ query, ...(time !== undefined ? { time: String(time) } : {}) });
  const response = await fetch(`${url}/api/v1/query?${params.toString()}`);
  const body = (await response.json()) as { status: string; error?: string; data: { result: T } };
  if (body.status !== "success") throw new Error(`prometheus: ${query}: ${body.error ?? response.status}`);
  return body.data.result;
}

/** The sum of an instant vector's values, 0 when it is empty. */
async function promSum(url: string, query: string, time?: number): Promise<number> {
  const result = await promQuery<{ value: [number, string] }[]>(url, query, time);
  return result.reduce((sum, r) => sum + Number(r.value[1]), 0);
}

/**
 * The app's requests from the simulated callers in the mesh, as the pods that served them report them:
 * one reporter, so that no request counts twice; by canonical service, which both tracks' pods carry (the
 * secondary's are never reported against the app's Service `<name>`, only `<name>-secondary`); callers
 * outside the mesh, which the route does not split, left out (docs/istio-telemetry.md). A Deployment's
 * pods report their Deployment as destination_workload, so `<name>-secondary` tells the secondary's apart.
 */
function meshServed(story: StoryResult): string {
  return `reporter="destination",destination_workload_namespace="${namespace}",destination_canonical_service="${story.app.metadata.name}",source_workload="${SOURCE_WORKLOAD}"`;
}

let systemApplied = false;
let scratch: string | undefined;
let env: Environment | undefined;
let recorder: StoryRecorder | undefined;
let story: StoryResult | undefined;
let retried: Retried | undefined;
let storyEnded = 0;
let passed = true;

after(async () => {
  recorder?.stop().catch(() => undefined);
  await env?.stop();
  // The controller's log helps only when something failed.
  if (env && passed) await rm(env.workDir, { recursive: true, force: true });
  else if (env) console.log(`# controller log kept: ${env.controller.logPath}`);
  if (scratch) await rm(scratch, { recursive: true, force: true });
  await core.deleteNamespace({ name: namespace }).catch(() => undefined);
  if (systemApplied) {
    // Everything config/default made except the CRD, which the whole cluster shares.
    const objects = (await kustomizeObjects()).filter((o) => o.kind !== "CustomResourceDefinition");
    // Waits until they are gone, so that a later test file may apply config/default again.
    await kubectl.run(
      ["delete", "--ignore-not-found", "--timeout=60s", "-f", "-"],
      objects.map((o) => dumpYaml(o)).join("---\n"),
    );
  }
});

describe("config/default", () => {
  test(`${KUSTOMIZE_APPLY} applies cleanly, and the controller Deployment rolls out`, async () => {
    const objects = await kustomizeObjects();
    const kinds = objects.map((o) => `${o.kind}/${o.metadata.name}`).sort();
    assert.deepEqual(kinds, [
      "ClusterRole/canaryapp-controller",
      "ClusterRoleBinding/canaryapp-controller",
      "CustomResourceDefinition/canaryanalysistemplates.canaryapp.io",
      "CustomResourceDefinition/canaryapps.canaryapp.io",
      "CustomResourceDefinition/clustercanaryanalysistemplates.canaryapp.io",
      "Deployment/canaryapp-controller",
      "Namespace/canaryapp-system",
      "Role/canaryapp-leader-election",
      "RoleBinding/canaryapp-leader-election",
      "ServiceAccount/canaryapp-controller",
      "ValidatingAdmissionPolicy/canaryapp-tenancy",
      "ValidatingAdmissionPolicyBinding/canaryapp-tenancy",
    ]);

    await notTerminating(kc, SYSTEM_NAMESPACE);
    systemApplied = true;
    const applied = await kubectl.shell(KUSTOMIZE_APPLY, repoRoot);
    const lines = applied.trim().split("\n");
    assert.equal(lines.length, objects.length, applied);
    for (const line of lines) assert.match(line, / serverside-applied$/, applied);

    // Applied again, as a server-side dry run (which cannot run before the namespace exists): it passes
    // admission and validation, and conflicts with nothing.
    const dryRun = await kubectl.shell(
      "kubectl kustomize config/default | kubectl apply --server-side --dry-run=server -f -",
      repoRoot,
    );
    const dryLines = dryRun.trim().split("\n");
    assert.equal(dryLines.length, objects.length, dryRun);
    for (const line of dryLines) assert.match(line, / serverside-applied \(server dry run\)$/, dryRun);

    const deployment = await waitFor(
      `Deployment ${SYSTEM_NAMESPACE}/canaryapp-controller: Available`,
      async () => {
        const d = await apps.readNamespacedDeployment({ namespace: SYSTEM_NAMESPACE, name: "canaryapp-controller" });
        const available = d.status?.conditions?.find((c) => c.type === "Available")?.status === "True";
        return available && d.status?.availableReplicas === d.spec?.replicas ? d : undefined;
      },
      { timeoutMs: 60_000, intervalMs: 250 },
    );
    assert.equal(deployment.spec?.template.spec?.serviceAccountName, SERVICE_ACCOUNT);
    assert.equal(deployment.spec?.template.spec?.containers[0]?.image, "canaryapp-controller:latest");
  });
});

describe("the story: v1 live, v2 promoted step by step, v3 caught and rolled back", () => {
  before(
    async () => {
      const started = Date.now();
      // The controller runs with exactly the permissions config/default grants it.
      if (!systemApplied) {
        await notTerminating(kc, SYSTEM_NAMESPACE);
        systemApplied = true;
        await kubectl.shell(KUSTOMIZE_APPLY, repoRoot);
      }
      scratch = await mkdtemp(join(tmpdir(), "canaryapp-story-"));
      const controllerKubeconfig = join(scratch, "controller-kubeconfig");
      await serviceAccountKubeconfig(kc, kubectl, controllerKubeconfig);
      env = await startEnvironment({ namespace, kubeconfig, controllerKubeconfig, rps: RPS }).catch((err: unknown) => {
        passed = false;
        throw err;
      });
      const seed = await readSample();
      recorder = await StoryRecorder.start(kc, namespace, seed.metadata.name ?? "canaryapp-sample");
      try {
        story = await runStory(
          { kubectl: env.kubectl, recorder, namespace, prometheusURL: env.prometheus.url, rps: RPS },
          {
            chapter: (index, title) =>
              console.log(`# ${((Date.now() - started) / 1000).toFixed(1)}s ${index}. ${title}`),
          },
        );
      } catch (err) {
        passed = false;
        throw err;
      }
      storyEnded = Date.now();
      console.log(`# story done in ${((storyEnded - started) / 1000).toFixed(1)}s (environment included)`);
      retried = await retryFailed(
        { kubectl: env.kubectl, recorder, namespace, prometheusURL: env.prometheus.url, rps: RPS },
        story.app.metadata.name ?? "",
        story.images.v3,
      ).catch((err: unknown) => {
        passed = false;
        throw err;
      });
    },
    { timeout: 300_000 },
  );

  test("the verdict the demo prints is all ✔", () => {
    assert.ok(story);
    for (const check of story.checks) {
      console.log(`# ${check.ok ? "✔" : "✘"} ${check.name}: ${check.detail}`);
    }
    assert.deepEqual(
      story.checks.filter((c) => !c.ok),
      [],
    );
  });

  test("the simulator's bad-request count over the story is 0, and callers outside the mesh never reached the secondary", () => {
    assert.ok(story && env);
    const checks = trafficChecks(env.simulator.state(), { namespace, name: story.app.metadata.name ?? "" });
    for (const check of checks) console.log(`# ${check.ok ? "✔" : "✘"} ${check.name}: ${check.detail}`);
    const bad = totalBad(env.simulator.state());
    console.log(`# primary pods replaced by the promotion's rolling update: ${bad.replaced} requests`);
    assert.deepEqual({ ...bad, replaced: 0 }, { noReadyPods: 0, reset: 0, replaced: 0, total: 0 });
    assert.deepEqual(
      checks.filter((c) => !c.ok),
      [],
    );
  });

  test("v3 retried (canaryapp.io/retry): tested again, and rolled back again with its reason", () => {
    assert.ok(story && retried);
    console.log(`# retry: new test at ${retried.startedAt}, ${retried.failure.reason}: ${retried.failure.message}`);
    assert.ok(Date.parse(retried.startedAt) >= retried.at - 1000, "a new test started after the retry");
    assert.equal(retried.failure.reason, "AnalysisFailed");
    assert.ok(Date.parse(retried.failure.failedAt) > Date.parse(story.failure?.failedAt ?? ""), "a new failure record");
  });

  test("v2's weight climbed 10, 20, 30, 40, 50, then went to 0; v3's went to 0 from its first step", () => {
    assert.ok(story);
    assert.deepEqual(story.steps, [10, 20, 30, 40, 50]);
    assert.deepEqual(story.weights.v2, [10, 20, 30, 40, 50, 0]);
    assert.equal(story.weights.v3.at(-1), 0);
    assert.ok(Math.max(...story.weights.v3) < 50, `v3 ${story.weights.v3.join(" → ")}`);
    console.log(`# v3's weights: ${story.weights.v3.join(" → ")}`);
  });

  test("the objects at the end: primary on v2, no secondary, route all on the primary, v3 failed with its reason", async () => {
    assert.ok(story && env);
    const names = childNames(story.app.metadata.name ?? "");
    const primary = await apps.readNamespacedDeployment({ namespace, name: names.primary });
    // Promoted by the digest v2's pods ran: kwok's pods report one derived from the image (fake-nodes.ts).
    assert.equal(
      primary.spec?.template.spec?.containers[0]?.image,
      pinImage(story.images.v2, fakeDigest(story.images.v2)),
    );
    await assert.rejects(apps.readNamespacedDeployment({ namespace, name: names.secondary }), (err: unknown) => {
      assert.equal(statusCodeOf(err), 404);
      return true;
    });
    const vs = (await custom.getNamespacedCustomObject({
      ...ISTIO_NETWORKING,
      plural: "virtualservices",
      namespace,
      name: names.virtualService,
    })) as { spec: { http: { route: { destination: { host: string }; weight: number }[] }[] } };
    const weights: Record<string, number> = Object.fromEntries(
      vs.spec.http[0]?.route.map((r): [string, number] => [destinationTrack(r.destination) ?? "?", r.weight]) ?? [],
    );
    assert.deepEqual(weights, { primary: 100, secondary: 0 });

    const app = (await custom.getNamespacedCustomObject({
      group: "canaryapp.io",
      version: "v1alpha1",
      plural: "canaryapps",
      namespace,
      name: names.virtualService,
    })) as CanaryApp;
    assert.equal(app.spec.image, story.images.v3);
    assert.equal(app.status?.phase, "Failed");
    assert.equal(app.status?.primaryImage, story.images.v2);
    assert.equal(app.status?.canary, undefined);
    const [failed, ...older] = app.status?.failedImages ?? [];
    assert.deepEqual(older, []);
    assert.equal(failed?.image, story.images.v3);
    assert.equal(failed.reason, "AnalysisFailed");
    assert.equal(failed.metric, "prometheusQuery");
    assert.ok(
      failed.value !== undefined && failed.value > 2,
      `the 5xx increase ${failed.value} is above the query's 2`,
    );
    assert.match(failed.message, /prometheusQuery returned 1 failing series/);
    console.log(`# v3 failed: ${failed.metric} = ${failed.value}`);
  });

  test("the Events on the CanaryApp tell the story, in order", async () => {
    assert.ok(story && recorder);
    // The story's Events, before the retry (whose own are checked by its test).
    const beforeRetry = retried?.at ?? Number.POSITIVE_INFINITY;
    const seen = recorder
      .events()
      .filter((e) => e.at < beforeRetry)
      .map((e) => e.value.reason);
    const decisions = seen.filter((r) => !["Created", "Updated", "Deleted"].includes(r));
    // Every verdict has its Event: a passed analysis right before each later step and the promotion; at
    // 10 % of the simulator's traffic the first step may need more than one interval to show its evidence.
    const verdicts = ["AnalysisPassed", "AnalysisInconclusive"];
    decisions.forEach((reason, i) => {
      const later = reason === "StepAdvanced" && decisions[i - 1] !== "TestStarted";
      if (later || reason === "Promoting") assert.equal(decisions[i - 1], "AnalysisPassed", `before ${reason} #${i}`);
    });
    assert.ok(decisions.filter((r) => r === "AnalysisInconclusive").length < 5, "v2 found its evidence");
    assert.deepEqual(
      decisions.filter((r) => !verdicts.includes(r)),
      [
        "Initializing",
        "TestStarted",
        "StepAdvanced",
        "StepAdvanced",
        "StepAdvanced",
        "StepAdvanced",
        "StepAdvanced",
        "Promoting",
        "PrimaryUpdated",
        "Promoted",
        "TestStarted",
        ...Array<string>(story.weights.v3.length - 1).fill("StepAdvanced"),
        "AnalysisFailed",
        "RollingBack",
        "RolledBack",
      ],
    );
    // And they are in the API, on the CanaryApp, for `kubectl describe`.
    const events = await core.listNamespacedEvent({
      namespace,
      fieldSelector: `involvedObject.kind=CanaryApp,involvedObject.name=${story.app.metadata.name}`,
    });
    const failed = events.items.find((e) => e.reason === "AnalysisFailed");
    assert.equal(failed?.type, "Warning");
    assert.match(failed?.message ?? "", new RegExp(`analysis of ${story.images.v3.replaceAll(".", "\\.")} failed`));
    assert.ok(events.items.some((e) => e.reason === "Promoted" && e.message?.includes(story?.images.v2 ?? "?")));
  });

  test("Prometheus saw requests on the secondary workload only while the route gave it weight", async () => {
    assert.ok(story && env && recorder);
    const { url } = env.prometheus;
    const secondary = `${story.app.metadata.name}-secondary`;
    // Let traffic run on after the rollback, so that a quiet stretch follows the last change of weight.
    const quietFrom = recorder.weightTimeline().at(-1)?.at ?? storyEnded;
    await sleep(Math.max(0, quietFrom + 7_000 - Date.now()));
    const end = Date.now();
    const span = Math.ceil((end - (story.chapters[0]?.startedAt ?? end)) / 1000) + 5;
    const series = await promQuery<MatrixSeries[]>(
      url,
      `istio_requests_total{${meshServed(story)}}[${span}s]`,
      end / 1000,
    );
    const deltas = scrapeDeltas(series, (m) => m["destination_workload"] === secondary);
    const segments = weightSegments(recorder.weightTimeline(), end);
    assert.ok(deltas.length > 30, `${deltas.length} scrapes`);
    assert.ok(
      deltas.some((d) => d.secondary > 0),
      "the secondary was sent requests",
    );
    // One second of slack: the simulator and the recorder see a route change through separate watches.
    const unexplained = unexplainedSecondaryTraffic(deltas, segments, 1_000);
    assert.deepEqual(unexplained, [], "scrape intervals with secondary traffic but no weight near them");

    // The same, literally, with increase() over the quiet stretch after the rollback.
    const quiet = Math.floor((end - quietFrom) / 1000) - 2;
    const query = (selector: string) => `sum(increase(istio_requests_total{${selector}}[${quiet}s]))`;
    const onSecondary = await promSum(
      url,
      query(`${meshServed(story)},destination_workload="${secondary}"`),
      end / 1000,
    );
    const onService = await promSum(url, query(meshServed(story)), end / 1000);
    assert.equal(onSecondary, 0, `increase on the secondary over the last ${quiet}s`);
    assert.ok(onService > 0, `increase on the service over the last ${quiet}s: ${onService}`);
  });

  test("…and in proportion to that weight", async () => {
    assert.ok(story && env && recorder);
    const { url } = env.prometheus;
    const secondary = `${story.app.metadata.name}-secondary`;
    const segments = weightSegments(recorder.weightTimeline(), Date.now());
    // Away from each change by a scrape (increase() counts only between samples inside its window), and
    // long enough to hold two scrapes or more: each step lasts one 5 s interval.
    const windows = innerWindows(segments, 1_000, 2_500).filter((w) => w.secondary > 0);
    assert.ok(windows.length >= 5, `${windows.length} weighted windows long enough to measure`);
    for (const w of windows) {
      const ms = Math.floor(w.to - w.from);
      const seconds = (ms / 1000).toFixed(1);
      const at = w.to / 1000;
      const inc = (selector: string) => promSum(url, `sum(increase(istio_requests_total{${selector}}[${ms}ms]))`, at);
      const onSecondary = await inc(`${meshServed(story)},destination_workload="${secondary}"`);
      const onService = await inc(meshServed(story));
      const share = onService === 0 ? NaN : (onSecondary / onService) * 100;
      console.log(
        `# weight ${w.secondary}%: secondary ${share.toFixed(1)}% of ${onService.toFixed(0)} requests over ${seconds}s`,
      );
      assert.ok(onService >= RPS, `requests over ${seconds}s at weight ${w.secondary}: ${onService}`);
      assert.ok(Math.abs(share - w.secondary) <= 15, `share ${share.toFixed(1)}% at weight ${w.secondary}%`);
    }
  });

  // Before the deletion below: Istio's analyzers judge the objects the story ended with (v2 on the primary, v3
  // rolled back, no secondary), on the API server, as istiod would find them.
  test("istioctl analyze on the story's namespace at its end: no errors, every warning explained", async () => {
    assert.ok(story);
    const report = await istioAnalyze(kubeconfig, namespace);
    printAnalyzeReport(report, ANALYZE_EXPLAINED);
    assertAnalyzeClean(report, ANALYZE_EXPLAINED);
  });

  test("deleting the CanaryApp removes its Deployments, Service, DestinationRule and VirtualService", async () => {
    assert.ok(story && env);
    const name = story.app.metadata.name ?? "";
    const names = childNames(name);
    const istio = (plural: string, child: string) => () =>
      custom.getNamespacedCustomObject({ ...ISTIO_NETWORKING, plural, namespace, name: child });
    const children: [string, () => Promise<unknown>][] = [
      [`Deployment ${names.primary}`, () => apps.readNamespacedDeployment({ namespace, name: names.primary })],
      [`Service ${names.service}`, () => core.readNamespacedService({ namespace, name: names.service })],
      [`DestinationRule ${names.destinationRule}`, istio("destinationrules", names.destinationRule)],
      [`VirtualService ${names.virtualService}`, istio("virtualservices", names.virtualService)],
    ];
    const uid = story.app.metadata.uid;
    for (const [what, read] of children) {
      const child = (await read()) as { metadata?: { ownerReferences?: { uid?: string; controller?: boolean }[] } };
      assert.ok(
        child.metadata?.ownerReferences?.some((o) => o.uid === uid && o.controller === true),
        `${what} is owned by the CanaryApp`,
      );
    }
    const started = Date.now();
    await env.kubectl.run(["-n", namespace, "delete", "canaryapp", name]);
    for (const [what, read] of children) {
      await waitFor(
        `${what} deleted by the garbage collector`,
        async () => {
          try {
            await read();
            return undefined;
          } catch (err) {
            return statusCodeOf(err) === 404 ? true : undefined;
          }
        },
        { timeoutMs: 60_000, intervalMs: 250 },
      );
    }
    console.log(`# children gone ${((Date.now() - started) / 1000).toFixed(1)}s after the delete`);
    // The ReplicaSets and their pods go next, through the Deployments' own owner references.
    await waitFor(
      "the app's pods deleted",
      async () => {
        const pods = await core.listNamespacedPod({ namespace, labelSelector: `canaryapp.io/app=${name}` });
        return pods.items.every((p) => p.metadata?.deletionTimestamp !== undefined) ? true : undefined;
      },
      { timeoutMs: 60_000, intervalMs: 250 },
    );
  });
});

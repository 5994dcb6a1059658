/**
 * `kubectl canaryapp` through the real kubectl binary and its plugin discovery, against the real API
 * server. No controller runs here: each test writes the status a controller would (through the status
 * subresource), and for a gateway-api app the HTTPRoute it would with a stand-in implementation reporting on
 * it, and checks what the plugin reads, writes, prints and exits with.
 */
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { mkdtempSync, readlinkSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { before, describe, test } from "node:test";
import { setTimeout as sleep } from "node:timers/promises";
import { AppsV1Api, CustomObjectsApi, loadYaml } from "@kubernetes/client-node";
import type { PooledKubeConfig as KubeConfig } from "../../src/kube/client.js";
import { findRepoRoot } from "../../e2e/cluster/toolchain.js";
import { withDefaults } from "../../src/api/defaults.js";
import { ANNOTATIONS, GROUP, PLURAL, VERSION, type CanaryApp, type CanaryAppStatus } from "../../src/api/types.js";
import { buildHTTPRoute, GATEWAY_API } from "../../src/router/gateway-api.js";
import type { Weights } from "../../src/rollout/types.js";
import {
  canaryApps,
  createTestNamespace,
  eventually,
  MERGE_PATCH,
  testKubeConfig,
  testKubeConfigPath,
} from "../support/kube.js";
import { Kubectl, linkPlugin, PLUGIN_SHIM } from "../support/kubectl.js";
import { startRouteImplementation } from "../support/route-implementation.js";

const V1 = "registry.example.com/shop/web:v1";
const V2 = "registry.example.com/shop/web:v2";
const V3 = "registry.example.com/shop/web:v3";

describe("kubectl canaryapp (the kubectl plugin)", () => {
  let kc: KubeConfig;
  let namespace: string;
  let apps: ReturnType<typeof canaryApps>;
  let kubectl: Kubectl;
  /** Runs `kubectl canaryapp ARGS -n NAMESPACE`. */
  const plugin = (...args: string[]) => kubectl.run(["canaryapp", ...args, "-n", namespace]);

  async function writeStatus(name: string, status: CanaryAppStatus): Promise<CanaryApp> {
    const app = await apps.get(name);
    const api = kc.makeApiClient(CustomObjectsApi);
    return (await api.patchNamespacedCustomObjectStatus(
      {
        group: GROUP,
        version: VERSION,
        plural: PLURAL,
        namespace,
        name,
        body: { status: { observedGeneration: app.metadata.generation, ...status } },
      },
      MERGE_PATCH,
    )) as CanaryApp;
  }

  async function create(name: string, image = V1): Promise<CanaryApp> {
    return apps.create({
      metadata: { name },
      spec: {
        image,
        imageListenPort: 8080,
        prometheusQuery: 'errors{app="{{name}}"} > 0',
        analysis: {
          interval: "2s",
          stepWeight: 10,
          maxWeight: 50,
          metrics: [{ name: "latency", query: "p99_ms", max: 500 }],
        },
      },
    });
  }

  before(async () => {
    kc = testKubeConfig();
    namespace = await createTestNamespace(kc, "kubectl-plugin");
    apps = canaryApps(kc, namespace);
    kubectl = new Kubectl(linkPlugin());
  });

  test(
    "make install-plugin links the plugin into PREFIX/bin, where kubectl discovers it",
    { timeout: 240_000 },
    async () => {
      const prefix = mkdtempSync(join(tmpdir(), "prefix-"));
      await promisify(execFile)("make", ["--no-print-directory", "install-plugin", `PREFIX=${prefix}`], {
        cwd: findRepoRoot(),
      });
      assert.equal(readlinkSync(join(prefix, "bin", "kubectl-canaryapp")), PLUGIN_SHIM);
      const installed = new Kubectl(join(prefix, "bin"));
      const list = await installed.run(["plugin", "list", "--name-only"]);
      assert.equal(list.code, 0, list.stderr);
      assert.match(list.stdout, /^kubectl-canaryapp$/m);
      const help = await installed.run(["canaryapp", "--help"]);
      assert.equal(help.code, 0, help.stderr);
      assert.match(help.stdout, /Usage: kubectl canaryapp/);
      for (const verb of ["get", "promote", "abort", "retry", "pause", "resume", "approve", "set", "history", "wait"]) {
        assert.match(help.stdout, new RegExp(`^  ${verb} `, "m"), verb);
      }
    },
  );

  test("pause, resume, promote, abort, approve, retry set exactly the README's annotations", async () => {
    await create("controls", V2);
    const annotations = async () => (await apps.get("controls")).metadata.annotations ?? {};

    let r = await plugin("pause", "controls");
    assert.deepEqual([r.code, r.stdout.trim()], [0, "canaryapp.canaryapp.io/controls paused"], r.stderr);
    assert.equal((await annotations())[ANNOTATIONS.paused], "true");

    r = await plugin("resume", "controls");
    assert.deepEqual([r.code, r.stdout.trim()], [0, "canaryapp.canaryapp.io/controls resumed"], r.stderr);
    assert.equal((await annotations())[ANNOTATIONS.paused], undefined);

    r = await plugin("promote", "controls");
    assert.deepEqual([r.code, r.stdout.trim()], [0, "canaryapp.canaryapp.io/controls promoted"], r.stderr);
    assert.equal((await annotations())[ANNOTATIONS.promote], "now");

    r = await plugin("abort", "controls", "-o", "json");
    assert.equal(r.code, 0, r.stderr);
    const printed = JSON.parse(r.stdout) as CanaryApp;
    assert.equal(printed.metadata.annotations?.[ANNOTATIONS.abort], "now", "-o json prints the patched object");

    r = await plugin("approve", "controls");
    assert.deepEqual([r.code, r.stdout.trim()], [0, "canaryapp.canaryapp.io/controls approved"], r.stderr);
    assert.equal((await annotations())[ANNOTATIONS.approve], "now");

    r = await plugin("retry", "controls");
    assert.deepEqual([r.code, r.stdout.trim()], [0, "canaryapp.canaryapp.io/controls retried"], r.stderr);
    assert.equal((await annotations())[ANNOTATIONS.retry], V2, "retry without an image names spec.image");
    r = await plugin("retry", "controls", V3);
    assert.equal(r.code, 0, r.stderr);
    assert.equal((await annotations())[ANNOTATIONS.retry], V3);

    const app = await apps.get("controls");
    assert.equal(app.spec.image, V2, "no control changes spec");
    assert.equal(app.metadata.generation, 1, "no control changes spec");
  });

  test("set image changes spec.image (a new generation)", async () => {
    await create("setimage");
    const r = await plugin("set", "image", "setimage", V2);
    assert.deepEqual([r.code, r.stdout.trim()], [0, "canaryapp.canaryapp.io/setimage image updated"], r.stderr);
    const app = await apps.get("setimage");
    assert.equal(app.spec.image, V2);
    assert.equal(app.metadata.generation, 2);
  });

  test("kubectl's conventions: -n, --context, --kubeconfig, exit codes and messages", async () => {
    await create("conv");
    const context = kc.getCurrentContext();
    // No KUBECONFIG in the environment: --kubeconfig alone must find the cluster.
    const explicit = await kubectl.run(
      [
        "canaryapp",
        "get",
        "conv",
        "--kubeconfig",
        testKubeConfigPath(),
        "--context",
        context,
        "-n",
        namespace,
        "-o",
        "name",
      ],
      { env: { KUBECONFIG: "" } },
    );
    assert.deepEqual([explicit.code, explicit.stdout.trim()], [0, "canaryapp.canaryapp.io/conv"], explicit.stderr);

    const badContext = await plugin("get", "conv", "--context", "nowhere");
    assert.equal(badContext.code, 1);
    assert.match(badContext.stderr, /context was not found for specified context: nowhere/);

    const missing = await plugin("promote", "missing");
    assert.equal(missing.code, 1);
    assert.match(missing.stderr, /^Error from server \(NotFound\): .*"missing" not found/m);

    const otherNamespace = await kubectl.run(["canaryapp", "get", "conv", "-n", "default"]);
    assert.equal(otherNamespace.code, 1, "the app is looked up in the namespace -n names");

    const usage = await plugin("wait", "conv", "--for=done");
    assert.equal(usage.code, 1);
    assert.match(usage.stderr, /Allowed choices are healthy, failed/);
  });

  test("history: each failed image with time, reason, value and the query that judged it", async () => {
    await create("hist", V3);
    await writeStatus("hist", {
      phase: "Failed",
      primaryImage: V1,
      failedImages: [
        {
          image: V3,
          failedAt: "2026-11-23T10:00:00Z",
          reason: "AnalysisFailed",
          message: "latency 812 above 500",
          metric: "latency",
          value: 812,
        },
        {
          image: V2,
          failedAt: "2026-11-23T09:00:00Z",
          reason: "AnalysisFailed",
          message: "errors",
          metric: "prometheusQuery",
          value: 4,
        },
        {
          image: "registry.example.com/shop/web:v0",
          failedAt: "2026-11-23T08:00:00Z",
          reason: "Aborted",
          message: "aborted by canaryapp.io/abort",
        },
      ],
    });
    const r = await plugin("history", "hist");
    assert.equal(r.code, 0, r.stderr);
    const lines = r.stdout.trim().split("\n");
    assert.match(lines[0] ?? "", /^IMAGE +FAILED AT +REASON +METRIC +VALUE +QUERY$/);
    assert.match(lines[1] ?? "", /web:v3 +2026-11-23T10:00:00Z +AnalysisFailed +latency +812 +p99_ms$/);
    assert.match(
      lines[2] ?? "",
      /web:v2 +2026-11-23T09:00:00Z +AnalysisFailed +prometheusQuery +4 +errors\{app="\{\{name\}\}"\} > 0$/,
    );
    assert.match(lines[3] ?? "", /web:v0 +2026-11-23T08:00:00Z +Aborted +- +- +-$/);

    const json = await plugin("history", "hist", "-o", "json");
    const rows = JSON.parse(json.stdout) as { image: string; value?: number; query?: string }[];
    assert.deepEqual(
      rows.map((row) => [row.image, row.value, row.query]),
      [
        [V3, 812, "p99_ms"],
        [V2, 4, 'errors{app="{{name}}"} > 0'],
        ["registry.example.com/shop/web:v0", undefined, undefined],
      ],
    );
  });

  test("get: the tree of the app, its Deployments, pods and VirtualService weights; -o yaml", async () => {
    await create("tree", V2);
    await writeStatus("tree", {
      phase: "Progressing",
      primaryImage: V1,
      message: "Testing v2: step 2 of 5, 20% of traffic on the secondary.",
      weights: { primary: 80, secondary: 20 },
      canary: {
        image: V2,
        stage: "Stepping",
        step: 1,
        startedAt: new Date().toISOString(),
        stepStartedAt: new Date().toISOString(),
        failedChecks: 0,
        lastAnalysis: {
          time: new Date().toISOString(),
          passed: true,
          metrics: [{ name: "latency", value: 132, max: 500, passed: true, reason: "ok" }],
        },
      },
    });
    const appsApi = kc.makeApiClient(AppsV1Api);
    for (const [track, image] of [
      ["primary", V1],
      ["secondary", V2],
    ] as const) {
      const labels = { "canaryapp.io/app": "tree", "canaryapp.io/track": track };
      await appsApi.createNamespacedDeployment({
        namespace,
        body: {
          metadata: { name: `tree-${track}`, labels },
          spec: {
            replicas: 1,
            selector: { matchLabels: labels },
            template: { metadata: { labels }, spec: { containers: [{ name: "app", image }] } },
          },
        },
      });
    }
    await kc.makeApiClient(CustomObjectsApi).createNamespacedCustomObject({
      group: "networking.istio.io",
      version: "v1",
      plural: "virtualservices",
      namespace,
      body: {
        apiVersion: "networking.istio.io/v1",
        kind: "VirtualService",
        metadata: { name: "tree", labels: { "canaryapp.io/app": "tree" } },
        spec: {
          hosts: ["tree"],
          http: [
            {
              name: "primary-secondary",
              route: [
                { destination: { host: "tree", subset: "primary" }, weight: 80 },
                { destination: { host: "tree", subset: "secondary" }, weight: 20 },
              ],
            },
          ],
        },
      },
    });

    const r = await plugin("get", "tree");
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, /^Phase: +Progressing$/m);
    assert.match(r.stdout, /^Steps: +\[#{8}\.{12}\] step 2 of 5, 20% of 50% \(weights 10,20,30,40,50\)$/m);
    assert.match(r.stdout, /^Analysis: +passed \d+s ago: latency=132 \(max 500\) ok$/m);
    assert.match(r.stdout, /^Traffic: +primary 80% +secondary 20%/m);
    const tree = r.stdout.slice(r.stdout.indexOf("CanaryApp/tree")).split("\n");
    assert.match(tree[1] ?? "", /^├── Deployment\/tree-primary {2}.*web:v1 {2}ready 0\/1/);
    assert.match(tree[2] ?? "", /^├── Deployment\/tree-secondary {2}.*web:v2 {2}ready 0\/1/);
    assert.equal(tree[3], "└── VirtualService/tree  primary 80  secondary 20");

    const wide = await plugin("get", "tree", "-o", "wide");
    assert.equal(wide.code, 0, wide.stderr);
    assert.ok(wide.stdout.includes("└── VirtualService/tree  primary 80  secondary 20"), wide.stdout);
    const json = await plugin("get", "tree", "-o", "json");
    assert.equal((JSON.parse(json.stdout) as CanaryApp).metadata.name, "tree");
    const yaml = await plugin("get", "tree", "-o", "yaml");
    assert.equal(loadYaml<CanaryApp>(yaml.stdout).status?.canary?.step, 1);
  });

  test("get: a gateway-api app in its mirror phase, from its HTTPRoute and the route's status", async () => {
    // A stand-in implementation accepts every route but `gw-refused`, which it accepts for none of its parents.
    const implementation = await startRouteImplementation(kc, namespace, (route) =>
      route.metadata.name === "gw-refused"
        ? { accepted: false, reason: "NotAllowedByListeners", message: "no listener allows routes from this namespace" }
        : { accepted: true },
    );
    try {
      for (const [name, step, weights] of [
        ["gw-mirror", 0, { primary: 100, secondary: 0, mirror: 20 }],
        ["gw-refused", 3, { primary: 75, secondary: 25 }],
      ] as const satisfies readonly (readonly [string, number, Weights])[]) {
        const app = await apps.create({
          metadata: { name },
          spec: {
            image: V2,
            imageListenPort: 8080,
            mesh: "gateway-api",
            service: { port: 80, hosts: ["web.example.com"], gateways: ["istio-system/public"] },
            analysis: {
              interval: "2s",
              mirror: { percent: 20, iterations: 2 },
              match: { rules: [{ headers: { "x-canary": { exact: "insider" } } }] },
              stepWeights: [25, 50],
              metrics: [{ name: "latency", query: "p99_ms", max: 500 }],
            },
          },
        });
        await writeStatus(name, {
          phase: "Progressing",
          primaryImage: V1,
          weights,
          canary: {
            image: V2,
            stage: "Stepping",
            step,
            startedAt: new Date().toISOString(),
            stepStartedAt: new Date().toISOString(),
            failedChecks: 0,
          },
        });
        // The HTTPRoute the controller writes for this step.
        await kc.makeApiClient(CustomObjectsApi).createNamespacedCustomObject({
          ...GATEWAY_API,
          plural: "httproutes",
          namespace,
          body: buildHTTPRoute(app, withDefaults(app.spec), weights),
        });
      }

      const mirror = await eventually("the mirror step, carried", async () => {
        const r = await plugin("get", "gw-mirror");
        // Until the stand-in reports on the route, it is not carried (RouteNotReported).
        return r.code === 0 && /^Traffic: +primary 100%/m.test(r.stdout) ? r.stdout : undefined;
      });
      assert.match(
        mirror,
        /^Steps: +\[\.{20}\] step 1 of 5: mirror 20%, 0% of 50% \(mirror 20% ×2, A\/B ×1, weights 25,50\)$/m,
      );
      assert.match(mirror, /^Traffic: +primary 100% {2}secondary 0% {2}mirror 20% {2}\(planned 100\/0, mirror 20%\)$/m);
      assert.match(mirror, /^└── HTTPRoute\/gw-mirror {2}primary 100 {2}secondary 0 {2}mirror 20%$/m);

      // get -w follows the HTTPRoute: a new generation, once its implementation carries it, is redrawn.
      const live = kubectl.spawn(["canaryapp", "get", "gw-mirror", "-w", "-n", namespace]);
      try {
        await live.until(/^Traffic: +primary 100% {2}secondary 0% {2}mirror 20%/m);
        const from = live.stdout.length;
        const app = await apps.get("gw-mirror");
        const rules = buildHTTPRoute(app, withDefaults(app.spec), { primary: 100, secondary: 0, mirror: 30 }).spec
          .rules;
        await kc
          .makeApiClient(CustomObjectsApi)
          .patchNamespacedCustomObject(
            { ...GATEWAY_API, plural: "httproutes", namespace, name: "gw-mirror", body: { spec: { rules } } },
            MERGE_PATCH,
          );
        await live.until(/^Traffic: +primary 100% {2}secondary 0% {2}mirror 30%/m, from);
      } finally {
        await live.stop();
      }

      const refused = await eventually("the refused step, with its reason", async () => {
        const r = await plugin("get", "gw-refused");
        return r.code === 0 && /^Route:/m.test(r.stdout) && !/RouteNotReported/.test(r.stdout) ? r.stdout : undefined;
      });
      assert.match(refused, /^Traffic: +primary -% {2}secondary -% {2}\(planned 75\/25\)$/m);
      assert.match(
        refused,
        /^Route: +not carried: RouteNotAccepted: HTTPRoute gw-refused: parent Service gw-refused: Accepted False \(NotAllowedByListeners: no listener allows routes from this namespace\)$/m,
      );
      assert.match(
        refused,
        /^└── HTTPRoute\/gw-refused {2}primary 75 {2}secondary 25 {2}\(not carried: RouteNotAccepted\)$/m,
      );
    } finally {
      implementation.stop();
    }
  });

  test("get: a batch release shows its batches; kubectl get shows the Batch column", async () => {
    await apps.create({
      metadata: { name: "batched" },
      spec: {
        image: V2,
        imageListenPort: 8080,
        replicas: 4,
        strategy: { type: "batches", batches: { count: 2, pause: "first" } },
      },
    });
    await writeStatus("batched", {
      phase: "Progressing",
      primaryImage: V1,
      canary: {
        image: V2,
        stage: "Stepping",
        step: 0,
        startedAt: new Date().toISOString(),
        stepStartedAt: new Date().toISOString(),
        failedChecks: 0,
        approval: { batch: 1, since: new Date().toISOString() },
      },
      batch: {
        current: 1,
        count: 2,
        summary: "1/2 paused",
        batches: [
          { batch: 1, replicas: 1, state: "paused" },
          { batch: 2, replicas: 4, state: "pending" },
        ],
      },
    });
    const r = await plugin("get", "batched");
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, /^Batch: +1\/2 paused {2}\(new replicas per batch: 1 paused, 4 pending\)$/m);
    assert.doesNotMatch(r.stdout, /^Steps:/m, "a batch release has batches, not weight steps");
    const listed = await kubectl.run(["get", "canaryapps", "batched", "-n", namespace]);
    assert.equal(listed.code, 0, listed.stderr);
    const [head, row] = listed.stdout.trim().split("\n");
    assert.match(head ?? "", /\bBATCH\b/);
    assert.match(row ?? "", /1\/2 paused/);
  });

  test("get -w redraws from a watch when the status changes", { timeout: 60_000 }, async () => {
    await create("live", V2);
    await writeStatus("live", { phase: "Progressing", primaryImage: V1, weights: { primary: 90, secondary: 10 } });
    const live = kubectl.spawn(["canaryapp", "get", "live", "-w", "-n", namespace]);
    try {
      await live.until(/^Phase: +Progressing$/m);
      const from = live.stdout.length;
      const written = Date.now();
      await writeStatus("live", { phase: "Paused", primaryImage: V1, weights: { primary: 90, secondary: 10 } });
      const seen = await live.until(/^Phase: +Paused$/m, from);
      console.log(`# get -w: redrawn ${seen - written} ms after the status write`);
      assert.ok(seen - written < 2000, `redrawn after ${seen - written} ms`);
    } finally {
      await live.stop();
    }
  });

  test("wait --for=healthy exits 0 once the new image is promoted", { timeout: 60_000 }, async () => {
    const app = await create("ok", V2);
    await writeStatus("ok", {
      phase: "Healthy",
      primaryImage: V1,
      observedGeneration: (app.metadata.generation ?? 1) - 1,
    });
    const waiting = kubectl.spawn(["canaryapp", "wait", "ok", "--for=healthy", "--timeout=30s", "-n", namespace]);
    await writeStatus("ok", { phase: "Progressing", primaryImage: V1 });
    await sleep(1500); // the plugin is watching by now, so the time below is from the write to the exit
    const promotedAt = Date.now();
    await writeStatus("ok", { phase: "Healthy", primaryImage: V2 });
    const exit = await waiting.exited;
    console.log(`# wait: exited ${exit.at - promotedAt} ms after the promoted status`);
    assert.equal(exit.code, 0, waiting.stderr);
    assert.match(waiting.stdout, /condition met: .*web:v2 is healthy on the primary/);
  });

  test("wait --for=healthy exits 2 with the reason when the image fails", { timeout: 60_000 }, async () => {
    await create("bad", V3);
    const waiting = kubectl.spawn(["canaryapp", "wait", "bad", "--for=healthy", "--timeout=30s", "-n", namespace]);
    await writeStatus("bad", { phase: "RollingBack", primaryImage: V1 });
    await writeStatus("bad", {
      phase: "Failed",
      primaryImage: V1,
      failedImages: [
        {
          image: V3,
          failedAt: "2026-11-23T10:00:00Z",
          reason: "AnalysisFailed",
          message: "latency 812 above max 500",
          metric: "latency",
          value: 812,
        },
      ],
    });
    const exit = await waiting.exited;
    assert.equal(exit.code, 2);
    assert.equal(
      waiting.stderr.trim(),
      `error: canaryapp.canaryapp.io/bad will not become healthy: ${V3} failed at 2026-11-23T10:00:00Z: AnalysisFailed (latency=812): latency 812 above max 500`,
    );

    const failed = await plugin("wait", "bad", "--for=failed", "--timeout=10s");
    assert.equal(failed.code, 0, failed.stderr);
    assert.match(failed.stdout, /condition met: .*web:v3 failed at/);
  });

  test("wait exits 3 on --timeout", { timeout: 30_000 }, async () => {
    await create("slow", V2);
    await writeStatus("slow", { phase: "Progressing", primaryImage: V1 });
    const r = await plugin("wait", "slow", "--for=healthy", "--timeout=2s");
    assert.equal(r.code, 3);
    assert.match(r.stderr, /timed out after 2s waiting for canaryapp.canaryapp.io\/slow to be healthy/);
    assert.ok(r.ms >= 2000 && r.ms < 8000, `${r.ms} ms`);
  });

  test("printer columns: image, phase, weight, batch, ready, age; -o wide adds primary, message and the last failure", async () => {
    await create("cols", V3);
    await writeStatus("cols", {
      phase: "Failed",
      primaryImage: V1,
      message: "v3 failed",
      weights: { primary: 100, secondary: 0 },
      conditions: [
        {
          type: "Ready",
          status: "True",
          reason: "PrimaryAvailable",
          message: "ok",
          lastTransitionTime: new Date().toISOString(),
        },
      ],
      failedImages: [
        {
          image: V3,
          failedAt: "2026-11-23T10:00:00Z",
          reason: "AnalysisFailed",
          message: "x",
          metric: "latency",
          value: 812,
        },
      ],
    });
    // Cells are cut at the header's column starts: an empty cell (no batch) is then "".
    const table = (stdout: string): string[][] => {
      const [head = "", ...rows] = stdout.trimEnd().split("\n");
      const starts = [...head.matchAll(/\S+/g)].map((m) => m.index);
      return [head, ...rows].map((line) =>
        starts.map((start, i) => line.slice(start, starts[i + 1] ?? line.length).trim()),
      );
    };
    const r = await kubectl.run(["get", "canaryapp", "cols", "-n", namespace]);
    assert.equal(r.code, 0, r.stderr);
    const [header, row] = table(r.stdout);
    assert.deepEqual(header, ["NAME", "IMAGE", "PHASE", "WEIGHT", "BATCH", "READY", "AGE"]);
    // A release by traffic steps has no batch.
    assert.deepEqual(row?.slice(0, 6), ["cols", V3, "Failed", "0", "", "True"]);
    assert.match(row?.[6] ?? "", /^\d+s$/);

    const wide = await kubectl.run(["get", "canaryapp", "cols", "-n", namespace, "-o", "wide"]);
    const [wideHeader, wideRow] = table(wide.stdout);
    assert.deepEqual(wideHeader, [
      "NAME",
      "IMAGE",
      "PRIMARY",
      "PHASE",
      "WEIGHT",
      "BATCH",
      "READY",
      "MESSAGE",
      "LAST-FAILURE",
      "STABLE-REVISION",
      "STABLE-PODS",
      "CANARY-REVISION",
      "CANARY-PODS",
      "AGE",
    ]);
    assert.deepEqual(wideRow?.slice(0, 9), ["cols", V3, V1, "Failed", "0", "", "True", "v3 failed", "AnalysisFailed"]);
  });
});

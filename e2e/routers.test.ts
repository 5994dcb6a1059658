/**
 * The story on the Gateway API router, and the mirror and A/B phases on both routers, on the cluster profile
 * (kwok nodes, garbage collector, the Gateway API's CRDs) with the traffic simulator as Istio's data plane and
 * Gateway API implementation (it routes by the HTTPRoute and writes its status as Istio does) and a real
 * Prometheus; the controller runs as its own process.
 *
 * - `gateway-api`, mesh parent: the demo's story (v1 → v2 promoted step by step → v3 caught, rolled back), in-mesh
 *   callers split by the HTTPRoute whose parent is the app's Service;
 * - `gateway-api`, Gateway parent: the same story with traffic also entering through a Gateway `istio-system/public`
 *   (listener host web.example.com), which the operator allows (--allowed-gateways, --allowed-hosts);
 * - beside each story, an app whose test is a mirror phase then an A/B phase and no weighted step: while mirrored
 *   the secondary answers no user (the simulator's counts), then only requests carrying the A/B header reach it;
 *   once on `gateway-api`, once on `istio`.
 *
 * The two environments run side by side (each its own namespace, simulator, Prometheus and controller).
 * Runs under `make test-e2e` (KUBECONFIG set by e2e/cluster/with-cluster, the cluster started with --gateway-api).
 */
import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import { rm } from "node:fs/promises";
import { after, before, describe, test } from "node:test";
import { CoreV1Api, CustomObjectsApi, dumpYaml } from "@kubernetes/client-node";
import type { CanaryApp, Mesh } from "../src/api/types.js";
import { GATEWAY_API, httpRouteAcceptance } from "../src/router/gateway-api.js";
import { startEnvironment, type Environment } from "./demo/environment.js";
import { StoryRecorder } from "./demo/recorder.js";
import {
  demoSample,
  readSample,
  retryFailed,
  runStory,
  trafficChecks,
  withTag,
  type Retried,
  type StoryResult,
} from "./demo/story.js";
import { totalBad, type AppState, type SimulatorState } from "./sim/ledger.js";
import { testKubeConfig, testKubeConfigPath } from "../test/support/kube.js";

const kubeconfig = testKubeConfigPath();
const kc = testKubeConfig();
const core = kc.makeApiClient(CoreV1Api);
const custom = kc.makeApiClient(CustomObjectsApi);
const suffix = randomBytes(3).toString("hex");
const RPS = 50;
const GATEWAY = { namespace: "istio-system", name: "public", host: "web.example.com" };
const AB_HEADER = { name: "x-canary", value: "insider", fraction: 0.3 };
const PHASED = "phased";

interface Run {
  label: string;
  env: Environment;
  story: StoryResult;
  /** The failed v3 retried after the story: tested again, rolled back again. */
  retried: Retried;
  /** The phased app: the simulator's counts when its A/B phase began and when its test ended. */
  phased: { atMatch: AppState; atEnd: AppState; app: CanaryApp };
  passed: boolean;
}

function appState(state: SimulatorState, namespace: string, name: string): AppState {
  const found = state.apps.find((a) => a.namespace === namespace && a.name === name);
  assert.ok(found, `${namespace}/${name} in the simulator's state`);
  return structuredClone(found);
}

/** The phased app: the sample with a mirror phase and an A/B phase on AB_HEADER, no weighted step. */
async function phasedApp(prometheusURL: string, mesh: Exclude<Mesh, "none">): Promise<CanaryApp> {
  const { app } = demoSample(await readSample(), { prometheusURL, interval: "5s" });
  app.metadata = { name: PHASED };
  app.spec.mesh = mesh;
  app.spec.analysis = {
    ...app.spec.analysis,
    mirror: { percent: 50, iterations: 2 },
    match: { rules: [{ headers: { [AB_HEADER.name]: { exact: AB_HEADER.value } } }], iterations: 2 },
    weighted: false,
  };
  return app;
}

/** The phased app from v1 to v2: the simulator's counts as its A/B phase begins and once v2 is promoted. */
async function runPhased(env: Environment, mesh: Exclude<Mesh, "none">): Promise<Run["phased"]> {
  const app = await phasedApp(env.prometheus.url, mesh);
  const recorder = await StoryRecorder.start(env.kc, env.namespace, PHASED, undefined, mesh);
  try {
    await env.kubectl.run(["-n", env.namespace, "apply", "-f", "-"], dumpYaml(app, { lineWidth: -1 }));
    await recorder.until(
      `${PHASED} Healthy on v1`,
      (r) =>
        r.app()?.status?.phase === "Healthy" && r.app()?.status?.primaryImage === app.spec.image ? true : undefined,
      { timeoutMs: 120_000 },
    );
    const v2 = withTag(app.spec.image, "v2");
    await env.kubectl.run([
      "-n",
      env.namespace,
      "patch",
      "canaryapp",
      PHASED,
      "--type=merge",
      "-p",
      JSON.stringify({ spec: { image: v2 } }),
    ]);
    // Status is written before the route: when it says A/B, no request has been sent by the A/B rule yet.
    const atMatch = await recorder.until(
      `${PHASED}: the A/B phase`,
      (r) =>
        r.app()?.status?.weights?.match === true ? appState(env.simulator.state(), env.namespace, PHASED) : undefined,
      { timeoutMs: 120_000 },
    );
    const done = await recorder.until(
      `${PHASED}: ${v2} promoted`,
      (r) => {
        const a = r.app();
        const failed = a?.status?.failedImages?.find((f) => f.image === v2);
        if (failed) throw new Error(`${v2} failed: ${failed.reason}: ${failed.message}`);
        return a?.status?.phase === "Healthy" && a.status.primaryImage === v2 && a.status.canary === undefined
          ? a
          : undefined;
      },
      { timeoutMs: 180_000 },
    );
    return { atMatch, atEnd: appState(env.simulator.state(), env.namespace, PHASED), app: done };
  } finally {
    await recorder.stop();
  }
}

async function runRouter(
  label: string,
  route: { mesh: "gateway-api"; hosts?: string[]; gateways?: string[] },
  phasedMesh: Exclude<Mesh, "none">,
  options: { gatewayRps?: number; controllerFlags?: string[] } = {},
): Promise<Run> {
  const namespace = `${label}-${suffix}`;
  const started = Date.now();
  const env = await startEnvironment({
    namespace,
    kubeconfig,
    rps: RPS,
    traffic: {
      requestHeaders: [{ kind: "header", ...AB_HEADER }],
      ...(options.gatewayRps !== undefined
        ? { gatewayRps: options.gatewayRps, gatewayNamespaces: [GATEWAY.namespace] }
        : {}),
    },
    ...(options.controllerFlags !== undefined ? { controllerFlags: options.controllerFlags } : {}),
  });
  let passed = false;
  try {
    const seed = await readSample();
    const recorder = await StoryRecorder.start(
      kc,
      namespace,
      seed.metadata.name ?? "canaryapp-sample",
      undefined,
      route.mesh,
    );
    try {
      const ctx = { kubectl: env.kubectl, recorder, namespace, prometheusURL: env.prometheus.url, rps: RPS };
      const [{ story, retried }, phased] = await Promise.all([
        (async () => {
          const story = await runStory(
            ctx,
            {
              chapter: (i, title) =>
                console.log(`# ${label} ${((Date.now() - started) / 1000).toFixed(1)}s ${i}. ${title}`),
            },
            { route },
          );
          const retried = await retryFailed(ctx, story.app.metadata.name ?? "", story.images.v3);
          return { story, retried };
        })(),
        runPhased(env, phasedMesh),
      ]);
      passed = true;
      console.log(`# ${label}: done in ${((Date.now() - started) / 1000).toFixed(1)}s (environment included)`);
      return { label, env, story, retried, phased, passed };
    } finally {
      await recorder.stop();
    }
  } finally {
    if (!passed) {
      console.log(`# ${label}: controller log kept: ${env.controller.logPath}`);
      await env.stop();
    }
  }
}

let mesh: Run | undefined;
let gateway: Run | undefined;

before(
  async () => {
    await core.createNamespace({ body: { metadata: { name: GATEWAY.namespace } } }).catch(() => undefined);
    await custom.createNamespacedCustomObject({
      group: GATEWAY_API.group,
      version: GATEWAY_API.version,
      plural: "gateways",
      namespace: GATEWAY.namespace,
      body: {
        apiVersion: `${GATEWAY_API.group}/${GATEWAY_API.version}`,
        kind: "Gateway",
        metadata: { name: GATEWAY.name },
        spec: {
          gatewayClassName: "istio",
          listeners: [
            {
              name: "http",
              port: 80,
              protocol: "HTTP",
              hostname: GATEWAY.host,
              allowedRoutes: { namespaces: { from: "All" } },
            },
          ],
        },
      },
    });
    [mesh, gateway] = await Promise.all([
      runRouter("gw-mesh", { mesh: "gateway-api" }, "gateway-api"),
      runRouter(
        "gw-ingress",
        { mesh: "gateway-api", hosts: [GATEWAY.host], gateways: [`${GATEWAY.namespace}/${GATEWAY.name}`] },
        "istio",
        {
          gatewayRps: 20,
          controllerFlags: [
            `--allowed-gateways=${GATEWAY.namespace}/${GATEWAY.name}`,
            `--allowed-hosts=${GATEWAY.host}`,
          ],
        },
      ),
    ]);
  },
  { timeout: 420_000 },
);

after(async () => {
  for (const run of [mesh, gateway]) {
    if (run === undefined) continue;
    await run.env.stop();
    if (run.passed) await rm(run.env.workDir, { recursive: true, force: true });
    await core.deleteNamespace({ name: run.env.namespace }).catch(() => undefined);
  }
  await custom
    .deleteNamespacedCustomObject({
      group: GATEWAY_API.group,
      version: GATEWAY_API.version,
      plural: "gateways",
      namespace: GATEWAY.namespace,
      name: GATEWAY.name,
    })
    .catch(() => undefined);
});

function storyTests(which: () => Run | undefined): void {
  test("the verdict the demo prints is all ✔; v2 stepped 10→50 and promoted, v3 rolled back", () => {
    const run = which();
    assert.ok(run);
    for (const check of run.story.checks)
      console.log(`# ${run.label} ${check.ok ? "✔" : "✘"} ${check.name}: ${check.detail}`);
    assert.deepEqual(
      run.story.checks.filter((c) => !c.ok),
      [],
    );
    assert.deepEqual(run.story.weights.v2, [10, 20, 30, 40, 50, 0]);
    assert.equal(run.story.weights.v3.at(-1), 0);
  });

  test("v3 retried (canaryapp.io/retry): tested again, and rolled back again with its reason", () => {
    const run = which();
    assert.ok(run);
    const { retried, story } = run;
    console.log(
      `# ${run.label} retry: new test at ${retried.startedAt}, ${retried.failure.reason}: ${retried.failure.message}`,
    );
    assert.ok(Date.parse(retried.startedAt) >= retried.at - 1000, "a new test started after the retry");
    assert.equal(retried.failure.reason, "AnalysisFailed");
    assert.ok(Date.parse(retried.failure.failedAt) > Date.parse(story.failure?.failedAt ?? ""), "a new failure record");
  });

  test("no request reached a track without a Ready pod; callers outside the mesh never reached the secondary", () => {
    const run = which();
    assert.ok(run);
    const state = run.env.simulator.state();
    const checks = trafficChecks(state, { namespace: run.env.namespace, name: run.story.app.metadata.name ?? "" });
    for (const check of checks) console.log(`# ${run.label} ${check.ok ? "✔" : "✘"} ${check.name}: ${check.detail}`);
    assert.deepEqual(
      checks.filter((c) => !c.ok),
      [],
    );
    assert.equal(totalBad(state).total, 0);
  });

  test("the HTTPRoute at the end: every parent accepted, all traffic on the primary", async () => {
    const run = which();
    assert.ok(run);
    const route: unknown = await custom.getNamespacedCustomObject({
      group: GATEWAY_API.group,
      version: GATEWAY_API.version,
      plural: "httproutes",
      namespace: run.env.namespace,
      name: run.story.app.metadata.name ?? "",
    });
    assert.deepEqual(httpRouteAcceptance(route), { carried: true });
    const rules = (route as { spec: { rules: { backendRefs: { name: string; weight: number }[] }[] } }).spec.rules;
    assert.deepEqual(
      rules[0]?.backendRefs.map((b) => b.weight),
      [100, 0],
    );
  });
}

function phasedTests(which: () => Run | undefined, router: string): void {
  test(`${router}: while mirrored, v2 got copies of requests and answered no user`, () => {
    const run = which();
    assert.ok(run);
    const { atMatch } = run.phased;
    console.log(
      `# ${run.label} ${router} mirror phase: mirrored to v2 ${atMatch.mirrored.secondary.total}, users answered by v2 ${atMatch.sent.secondary.total}, by v1 ${atMatch.sent.primary.total}`,
    );
    assert.ok(atMatch.mirrored.secondary.total > 0, "v2 got mirrored copies");
    assert.equal(atMatch.sent.secondary.total, 0, "no user request was answered by v2");
  });

  test(`${router}: in the A/B phase only requests carrying ${AB_HEADER.name}: ${AB_HEADER.value} reached v2; then promoted`, () => {
    const run = which();
    assert.ok(run);
    const { atEnd, app } = run.phased;
    const untagged = atEnd.sent.secondary.total - atEnd.tagged.secondary.total;
    console.log(
      `# ${run.label} ${router} A/B: tagged to v2 ${atEnd.tagged.secondary.total}, untagged to v2 ${untagged}, tagged to v1 ${atEnd.tagged.primary.total}`,
    );
    assert.ok(atEnd.tagged.secondary.total > 0, "requests with the header reached v2");
    assert.equal(untagged, 0, "no request without the header reached v2");
    assert.equal(app.status?.phase, "Healthy");
    assert.equal(atEnd.bad.noReadyPods + atEnd.bad.reset, 0);
  });
}

describe("gateway-api, mesh parent (GAMMA)", () => {
  storyTests(() => mesh);
  phasedTests(() => mesh, "gateway-api");
});

describe("gateway-api, Gateway parent", () => {
  storyTests(() => gateway);

  test("traffic entering through the Gateway followed the route: it reached v2 only during the tests", () => {
    const run = gateway;
    assert.ok(run);
    const seen = appState(run.env.simulator.state(), run.env.namespace, run.story.app.metadata.name ?? "");
    console.log(
      `# through the Gateway: primary ${seen.throughGateways.primary.total}, secondary ${seen.throughGateways.secondary.total}`,
    );
    assert.ok(seen.throughGateways.primary.total > 0);
    assert.ok(seen.throughGateways.secondary.total > 0, "the Gateway's share of v2 and v3's steps");
  });

  phasedTests(() => gateway, "istio");
});

/**
 * The parts of `make bench-peers` its figures rest on: the counting proxy (against the real API server, as the
 * controllers use it) and the table it prints and puts in the README.
 */
import assert from "node:assert/strict";
import { mkdtemp } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { AppsV1Api, CoreV1Api, type CoreV1Event } from "@kubernetes/client-node";
import { appOf, classify, startCountingProxy, type CountingProxy } from "../../bench/peers/proxy.js";
import {
  markdownTable,
  range,
  README_END,
  README_START,
  replaceBetweenMarkers,
  type PeerFigures,
  type PeersResult,
} from "../../bench/peers/report.js";
import { NamespaceView } from "../../bench/peers/watch.js";
import { loadKubeConfig } from "../../src/kube/client.js";
import { createTestNamespace, MERGE_PATCH, testKubeConfig, testKubeConfigPath } from "../support/kube.js";

describe("the counting proxy, in front of the real API server", () => {
  let proxy: CountingProxy;
  let namespace: string;
  before(async () => {
    namespace = await createTestNamespace(testKubeConfig(), "bench-proxy");
    const dir = await mkdtemp(join(tmpdir(), "bench-proxy-"));
    proxy = await startCountingProxy(testKubeConfigPath(), join(dir, "kubeconfig"));
  });
  after(async () => proxy.stop());

  test("forwards a client's requests and records each with its verb, resource and object", async () => {
    const kc = loadKubeConfig(proxy.kubeconfigPath);
    const apps = kc.makeApiClient(AppsV1Api);
    const core = kc.makeApiClient(CoreV1Api);
    const deployment = {
      metadata: { name: "shop", labels: { app: "shop" } },
      spec: {
        replicas: 0,
        selector: { matchLabels: { app: "shop" } },
        template: { metadata: { labels: { app: "shop" } }, spec: { containers: [{ name: "a", image: "x:v1" }] } },
      },
    };
    const before = proxy.requests.length;
    await apps.createNamespacedDeployment({ namespace, body: deployment });
    await apps.readNamespacedDeployment({ namespace, name: "shop" });
    await apps.patchNamespacedDeployment({ namespace, name: "shop", body: { spec: { replicas: 1 } } }, MERGE_PATCH);
    await apps.listNamespacedDeployment({ namespace });
    const event: CoreV1Event = {
      metadata: { name: "shop-primary.1" },
      involvedObject: { kind: "Deployment", name: "shop-primary", namespace },
      reason: "Test",
      message: "m",
    };
    await core.createNamespacedEvent({ namespace, body: event });
    await core.readNamespacedPodLog({ namespace, name: "missing" }).catch(() => undefined);
    const seen = proxy.requests.slice(before).map((r) => `${r.verb} ${r.resource} ${r.name ?? "-"}`);
    assert.deepEqual(seen, [
      "create deployments shop",
      "get deployments shop",
      "patch deployments shop",
      "list deployments -",
      "create events shop-primary",
      "get pods/log missing",
    ]);
    // What the API server answered came back through the proxy.
    assert.equal((await apps.readNamespacedDeployment({ namespace, name: "shop" })).spec?.replicas, 1);
  });

  test("a watch through the proxy opens before any event, streams events as they happen, and counts once", async () => {
    const before = proxy.requests.length;
    const abort = new AbortController();
    try {
      // An empty collection: the watch has nothing to send until the Secret below is made, and a client
      // (client-go, client-node) waits for the response's headers before it counts the watch as started.
      const response = await Promise.race([
        fetch(`${proxy.url}/api/v1/namespaces/${namespace}/secrets?watch=true`, { signal: abort.signal }),
        new Promise<never>((_, reject) =>
          setTimeout(() => reject(new Error("the watch's headers never came through the proxy")), 5_000),
        ),
      ]);
      assert.equal(response.status, 200);
      await testKubeConfig()
        .makeApiClient(CoreV1Api)
        .createNamespacedSecret({ namespace, body: { metadata: { name: "late" } } });
      assert.ok(response.body);
      let text = "";
      for await (const chunk of response.body as AsyncIterable<Uint8Array>) {
        text += Buffer.from(chunk).toString("utf8");
        if (text.includes("\n")) break;
      }
      const event = JSON.parse(text.split("\n")[0] ?? "") as { type: string; object: { metadata: { name: string } } };
      assert.equal(`${event.type} ${event.object.metadata.name}`, "ADDED late");
    } finally {
      abort.abort();
    }
    const watches = proxy.requests.slice(before).filter((r) => r.verb === "watch");
    assert.deepEqual(
      watches.map((r) => r.resource),
      ["secrets"],
    );
  });

  test("the view the benchmark times rollouts by sees objects change", async () => {
    const kc = testKubeConfig();
    const path = `/apis/apps/v1/namespaces/${namespace}/deployments`;
    const view = new NamespaceView(kc, [path]);
    await view.start();
    try {
      const replicas = () => (view.get(path, "shop")?.spec as { replicas?: number } | undefined)?.replicas;
      await view.until("shop seen", () => replicas() !== undefined, 10_000);
      const changed = view.until("shop at 3 replicas", () => replicas() === 3, 10_000);
      await kc
        .makeApiClient(AppsV1Api)
        .patchNamespacedDeployment({ namespace, name: "shop", body: { spec: { replicas: 3 } } }, MERGE_PATCH);
      assert.ok((await changed) <= Date.now());
    } finally {
      view.stop();
    }
  });
});

describe("what the proxy's records are attributed to", () => {
  test("classify: paths of core and grouped, namespaced and cluster resources", () => {
    assert.deepEqual(classify("GET", "/api/v1/namespaces/ns/pods?watch=true&resourceVersion=1"), {
      verb: "watch",
      resource: "pods",
      name: undefined,
    });
    assert.deepEqual(classify("GET", "/apis/flagger.app/v1beta1/namespaces/ns/canaries/app-01"), {
      verb: "get",
      resource: "canaries",
      name: "app-01",
    });
    assert.deepEqual(classify("PUT", "/apis/flagger.app/v1beta1/namespaces/ns/canaries/app-01/status"), {
      verb: "update",
      resource: "canaries/status",
      name: "app-01",
    });
    assert.deepEqual(classify("GET", "/api/v1/namespaces/ns"), { verb: "get", resource: "namespaces", name: "ns" });
    assert.deepEqual(classify("DELETE", "/apis/apps/v1/namespaces/ns/deployments"), {
      verb: "deletecollection",
      resource: "deployments",
      name: undefined,
    });
    assert.equal(classify("GET", "/version"), undefined);
    assert.equal(classify("GET", "/apis/apps/v1"), undefined);
  });

  test("appOf: an app, its children and its Events, never a longer name that merely starts alike", () => {
    const apps = ["app-1", "app-10"];
    assert.equal(appOf("app-1", apps), "app-1");
    assert.equal(appOf("app-1-primary", apps), "app-1");
    assert.equal(appOf("app-1.18a7c0f3", apps), "app-1");
    assert.equal(appOf("app-10-canary", apps), "app-10");
    assert.equal(appOf("app-100", apps), undefined);
    assert.equal(appOf(undefined, apps), undefined);
  });
});

describe("the table of make bench-peers", () => {
  const peer = (label: string, over: Partial<PeerFigures>): PeerFigures => ({
    label,
    apps: 20,
    intervalSeconds: 10,
    steps: 5,
    atRest: { windowSeconds: 60, requests: 0, requestsPerMinute: 0, byVerb: {} },
    rssMiB: 100,
    rollouts: [],
    sharedRequestsDuringRollouts: 0,
    ...over,
  });
  const result: PeersResult = {
    date: "2026-11-23T16:00:00.000Z",
    work: { apps: 20, intervalSeconds: 10, stepWeight: 10, maxWeight: 50, rollouts: 2 },
    machine: { cpus: 2, node: "v24" },
    peers: [
      peer("canaryapp", {
        rssMiB: 120,
        rollouts: [
          {
            app: "a",
            scaledUpSeconds: 0.03,
            firstWeightSeconds: 0.2,
            allTrafficSeconds: 50.2,
            fullSeconds: 55.2,
            requests: 36,
            requestsByVerb: {},
          },
          {
            app: "b",
            scaledUpSeconds: 0.05,
            firstWeightSeconds: 0.3,
            allTrafficSeconds: 50.4,
            fullSeconds: 55.4,
            requests: 36,
            requestsByVerb: {},
          },
        ],
      }),
      peer("Flagger 1.44.0", {
        rssMiB: 60,
        atRest: { windowSeconds: 60, requests: 1440, requestsPerMinute: 1440, byVerb: {} },
        rollouts: [
          {
            app: "a",
            scaledUpSeconds: 1.2,
            firstWeightSeconds: 11,
            allTrafficSeconds: 80,
            fullSeconds: 81,
            requests: 160,
            requestsByVerb: {},
          },
          {
            app: "b",
            scaledUpSeconds: 9.3,
            firstWeightSeconds: 19,
            allTrafficSeconds: 88,
            fullSeconds: 89,
            requests: 180,
            requestsByVerb: {},
          },
        ],
      }),
    ],
  };

  test("range: min, median, max", () => {
    assert.deepEqual(range([3, 1, 2]), { min: 1, median: 2, max: 3 });
    assert.deepEqual(range([4, 1]), { min: 1, median: 2.5, max: 4 });
    assert.equal(range([]), undefined);
  });

  test("one row per figure, both peers, and the ratio of medians", () => {
    const lines = markdownTable(result).split("\n");
    assert.equal(lines[0], "|  | canaryapp | Flagger 1.44.0 | Flagger 1.44.0 ÷ canaryapp |");
    assert.ok(lines.includes("| API requests/min at rest, 20 apps | 0 | 1,440 | ∞ |"), lines.join("\n"));
    assert.ok(lines.includes("| image patch → new version scaled up | 0.03–0.05 s | 1.2–9.3 s | 131× |"));
    assert.ok(lines.includes("| image patch → first weight | 0.20–0.30 s | 11.0–19.0 s | 60× |"));
    assert.ok(
      lines.includes(
        "| image patch → all traffic on it, 5 steps (floor: 50 s of steps) | 50.2–50.4 s | 80.0–88.0 s | 1.67× |",
      ),
    );
    assert.ok(
      lines.includes("| image patch → at rest again (the test's pods removed) | 55.2–55.4 s | 81.0–89.0 s | 1.54× |"),
    );
    assert.ok(lines.includes("| API requests during one rollout (about that app) | 36 | 160–180 | 4.72× |"));
    assert.ok(lines.includes("| RSS, 20 apps | 120 MiB | 60 MiB | 0.50× |"));
  });

  test("the README block is replaced between its markers, and missing markers are an error", () => {
    const readme = `# x\n${README_START}\nold\n${README_END}\nafter\n`;
    assert.equal(replaceBetweenMarkers(readme, "new"), `# x\n${README_START}\nnew\n${README_END}\nafter\n`);
    assert.throws(() => replaceBetweenMarkers("# x\n", "new"), /bench-peers:start/);
  });
});

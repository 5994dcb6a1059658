/**
 * Sharding over children written before the share label (ADR 0016): an unsharded controller creates the apps'
 * children (no share label), then two sharded replicas take over. While any child lacks its label, a share
 * gained is loaded by a full list (a list by label would miss those children, and a reconcile would plan
 * without them: the primary "missing"). Every child gets its label by one apply; then a replica SIGKILLed has
 * its shares taken by the other, which loads them by label alone and caches every child of its shares.
 */
import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import { AppsV1Api, CoreV1Api, CustomObjectsApi, CoordinationV1Api } from "@kubernetes/client-node";
import type { CanaryApp } from "../../src/api/types.js";
import { LABELS } from "../../src/api/types.js";
import { isLeaseExpired, recordFromSpec } from "../../src/controller/lease.js";
import { SHARD_LABELS } from "../../src/controller/shard-leases.js";
import { shareLabelValue, shareOf } from "../../src/controller/shards.js";
import { ISTIO_NETWORKING } from "../../src/router/istio.js";
import { autoRollout, type AutoRollout } from "../support/auto-rollout.js";
import { canaryApps, createTestNamespace, eventually, testKubeConfig, testKubeConfigPath } from "../support/kube.js";
import { spawnController, type ControllerProcess } from "../support/process.js";

const APPS = 16;
const SHARES = 8;
const GROUP = "canaryapp-controller";

interface Child {
  metadata?: { name?: string; labels?: Record<string, string> };
}

const kc = testKubeConfig();
let namespace: string;
let rollout: AutoRollout;
const processes: ControllerProcess[] = [];

before(async () => {
  namespace = await createTestNamespace(kc, "shard-upgrade");
  rollout = autoRollout(kc, namespace);
});

after(async () => {
  await rollout.stop();
  await Promise.all(processes.map((p) => p.kill("SIGKILL")));
});

/** Every child of the apps (managed by the controller), by kind. */
async function children(): Promise<Record<string, Child[]>> {
  const labelSelector = `${LABELS.managedBy}=canaryapp`;
  const custom = kc.makeApiClient(CustomObjectsApi);
  const istio = async (plural: string): Promise<Child[]> =>
    (
      (await custom.listNamespacedCustomObject({ ...ISTIO_NETWORKING, namespace, plural, labelSelector })) as {
        items: Child[];
      }
    ).items;
  return {
    deployment: (await kc.makeApiClient(AppsV1Api).listNamespacedDeployment({ namespace, labelSelector })).items,
    service: (await kc.makeApiClient(CoreV1Api).listNamespacedService({ namespace, labelSelector })).items,
    destinationrule: await istio("destinationrules"),
    virtualservice: await istio("virtualservices"),
  };
}

const shareOfChild = (child: Child): number =>
  shareOf(`${namespace}/${child.metadata?.labels?.[LABELS.app] ?? ""}`, SHARES);

/** The holder of each share whose Lease is not expired. */
async function shareHolders(): Promise<(string | undefined)[]> {
  const leases = await kc.makeApiClient(CoordinationV1Api).listNamespacedLease({
    namespace,
    labelSelector: `${SHARD_LABELS.group}=${GROUP},${SHARD_LABELS.role}=share`,
  });
  const holders = new Array<string | undefined>(SHARES).fill(undefined);
  const now = Date.now();
  for (const lease of leases.items) {
    const record = recordFromSpec(lease.spec);
    if (!isLeaseExpired(record, now)) holders[Number(lease.metadata?.name?.split("-").at(-1))] = record.holderIdentity;
  }
  return holders;
}

/** What each replica's child caches miss or hold beyond the children of its shares; empty when exact. */
async function cacheMismatches(replicas: readonly ControllerProcess[]): Promise<string[]> {
  const byKind = await children();
  const holders = await shareHolders();
  const out: string[] = [];
  for (const replica of replicas) {
    for (const [kind, list] of Object.entries(byKind)) {
      const want = list.filter((c) => holders[shareOfChild(c)] === replica.identity).length;
      const held = await replica.metric(`canaryapp_cached_objects{cache="${kind}"}`);
      if (held !== want) out.push(`${replica.identity} ${kind}: caches ${held}, its shares have ${want}`);
    }
  }
  return out;
}

/** Apps whose Ready condition is False now, with its reason. */
async function notReady(): Promise<string[]> {
  const list = (await kc.makeApiClient(CustomObjectsApi).listNamespacedCustomObject({
    group: "canaryapp.io",
    version: "v1alpha1",
    plural: "canaryapps",
    namespace,
  })) as { items: CanaryApp[] };
  return list.items.flatMap((app) => {
    const ready = app.status?.conditions?.find((c) => c.type === "Ready");
    return ready?.status === "False" ? [`${app.metadata.name ?? ""}: ${ready.reason ?? ""}`] : [];
  });
}

test(
  "children written unsharded: shares are loaded whole until every child carries its share label, then by label",
  { timeout: 300_000 },
  async () => {
    const path = testKubeConfigPath();
    const common = [`--kubeconfig=${path}`, `--namespaces=${namespace}`];
    // 1. Unsharded: every child is written without a share label.
    const single = spawnController([...common, "--leader-elect=false"], "unsharded");
    processes.push(single);
    const apps = canaryApps(kc, namespace);
    for (let i = 0; i < APPS; i++) {
      await apps.create({
        metadata: { name: `app-${i}` },
        spec: { image: `example/app-${i}:v1`, imageListenPort: 8080 },
      });
    }
    await eventually(
      "every app routed and Ready",
      async () => {
        const vs = (await children()).virtualservice ?? [];
        return vs.length === APPS && (await notReady()).length === 0 ? true : undefined;
      },
      { timeoutMs: 120_000, intervalMs: 500 },
    );
    const unlabelled = Object.values(await children())
      .flat()
      .filter((c) => c.metadata?.labels?.[LABELS.share] === undefined);
    assert.ok(unlabelled.length >= APPS * 5, `children without a share label: ${unlabelled.length}`);
    await single.kill("SIGKILL");

    // 2. Two sharded replicas over them. No app may be seen without its primary meanwhile: a reconcile that
    //    planned without a child its cache missed would say it is missing. (Ready turns False for a moment
    //    all the same, PrimaryNotAvailable: the label comes with a new applied hash, an annotation, and a
    //    Deployment's generation counts annotation changes until the Deployment controller observes it.)
    const flags = [...common, `--lease-namespace=${namespace}`, `--shards=${SHARES}`];
    const a = spawnController(flags, "replica-a");
    const b = spawnController(flags, "replica-b");
    processes.push(a, b);
    const flaps = new Set<string>();
    let watching = true;
    const watch = (async () => {
      while (watching) {
        for (const line of await notReady().catch(() => [])) if (line.endsWith("PrimaryMissing")) flaps.add(line);
        await new Promise((r) => setTimeout(r, 250));
      }
    })();
    try {
      await eventually(
        "every child labelled with its share",
        async () => {
          const all = Object.values(await children()).flat();
          const wrong = all.filter(
            (c) => c.metadata?.labels?.[LABELS.share] !== shareLabelValue(shareOfChild(c), SHARES),
          );
          return all.length > 0 && wrong.length === 0 ? true : undefined;
        },
        { timeoutMs: 120_000, intervalMs: 500 },
      );
      const fullLoads = [...a.logs, ...b.logs].filter((l) => String(l["msg"]).includes("loading by a full list"));
      assert.ok(fullLoads.length > 0, "shares gained over unlabelled children were loaded by a full list");
      await eventually(
        "each replica caching exactly its shares' children",
        async () => ((await cacheMismatches([a, b])).length === 0 ? true : undefined),
        { timeoutMs: 60_000, intervalMs: 1_000 },
      );

      // 3. a is SIGKILLed: b takes its shares (after the lease duration) and loads them by label alone.
      const before = [...b.logs].length;
      await a.kill("SIGKILL");
      await eventually(
        "b holding every share",
        async () => ((await shareHolders()).every((h) => h === b.identity) ? true : undefined),
        { timeoutMs: 60_000, intervalMs: 250 },
      );
      await eventually(
        "b caching every child",
        async () => ((await cacheMismatches([b])).length === 0 ? true : undefined),
        { timeoutMs: 30_000, intervalMs: 500 },
      );
      const fullAfter = b.logs.slice(before).filter((l) => String(l["msg"]).includes("loading by a full list"));
      assert.deepEqual(fullAfter, [], "every child labelled: the shares taken over were loaded by label");
    } finally {
      watching = false;
      await watch;
    }
    assert.deepEqual([...flaps], [], "no app was seen without its primary");
  },
);

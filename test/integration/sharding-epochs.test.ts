/**
 * Share counts changed by rolling updates (ADR 0024): two unsharded (leader-elected) replicas are replaced one
 * by one, as a Deployment's RollingUpdate replaces pods (a new one started, then an old one stopped), by two of
 * 4 shares, and those by two of 8 shares, while apps are created throughout. From each replica's log, the
 * windows in which it could write for each app (its fence open, or leading); no app may be in the windows of two
 * replicas at once, and every app ends converged: routed, Ready, every child labelled with its share of 8. The
 * API server's audit log (with-cluster --audit, as `npm run test:integration` starts it) tells the same from
 * the writes themselves: no app written by two replicas in overlapping windows (test/support/write-audit.ts).
 */
import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import { AppsV1Api, CoreV1Api, CustomObjectsApi } from "@kubernetes/client-node";
import type { CanaryApp } from "../../src/api/types.js";
import { LABELS } from "../../src/api/types.js";
import { shareLabelValue, shareOf } from "../../src/controller/shards.js";
import { ISTIO_NETWORKING } from "../../src/router/istio.js";
import { longestGap, overlappingAppTenures, type Replica } from "../support/app-tenures.js";
import { autoRollout, type AutoRollout } from "../support/auto-rollout.js";
import { canaryApps, createTestNamespace, eventually, testKubeConfig, testKubeConfigPath } from "../support/kube.js";
import { spawnController } from "../support/process.js";
import { auditLog, formatAudit } from "../support/write-audit.js";

interface Child {
  metadata?: { name?: string; labels?: Record<string, string> };
}

const kc = testKubeConfig();
let namespace: string;
let rollout: AutoRollout;
const replicas: Replica[] = [];
const keys: string[] = [];

before(async () => {
  namespace = await createTestNamespace(kc, "shard-epochs");
  rollout = autoRollout(kc, namespace);
});

after(async () => {
  await rollout.stop();
  await Promise.all(replicas.map((r) => r.process.kill("SIGKILL")));
});

async function children(): Promise<Child[]> {
  const labelSelector = `${LABELS.managedBy}=canaryapp`;
  const custom = kc.makeApiClient(CustomObjectsApi);
  const istio = async (plural: string): Promise<Child[]> =>
    (
      (await custom.listNamespacedCustomObject({ ...ISTIO_NETWORKING, namespace, plural, labelSelector })) as {
        items: Child[];
      }
    ).items;
  return [
    ...(await kc.makeApiClient(AppsV1Api).listNamespacedDeployment({ namespace, labelSelector })).items,
    ...(await kc.makeApiClient(CoreV1Api).listNamespacedService({ namespace, labelSelector })).items,
    ...(await istio("destinationrules")),
    ...(await istio("virtualservices")),
  ];
}

/**
 * The apps not converged: no children yet, Ready not reported or False, or (given `shares`) a child not
 * labelled with its app's share of that count.
 */
async function unconverged(shares?: number): Promise<string[]> {
  const list = (await kc.makeApiClient(CustomObjectsApi).listNamespacedCustomObject({
    group: "canaryapp.io",
    version: "v1alpha1",
    plural: "canaryapps",
    namespace,
  })) as { items: CanaryApp[] };
  const all = await children();
  const routed = new Set(
    all.filter((c) => c.metadata?.labels?.[LABELS.app] !== undefined).map((c) => c.metadata?.labels?.[LABELS.app]),
  );
  const mislabelled = new Set(
    shares === undefined
      ? []
      : all
          .filter((c) => {
            const key = `${namespace}/${c.metadata?.labels?.[LABELS.app] ?? ""}`;
            return c.metadata?.labels?.[LABELS.share] !== shareLabelValue(shareOf(key, shares), shares);
          })
          .map((c) => c.metadata?.labels?.[LABELS.app]),
  );

  return list.items.flatMap((app) => {
    const name = app.metadata.name ?? "";
    const ready = app.status?.conditions?.find((c) => c.type === "Ready");
    if (!routed.has(name)) return [`${name}: no children`];
    if (mislabelled.has(name)) return [`${name}: a child not labelled with its share of ${shares ?? 0}`];
    return ready !== undefined && ready.status !== "False"
      ? []
      : [`${name}: Ready ${ready?.status ?? "unset"} ${ready?.reason ?? ""}`];
  });
}

async function createApps(from: number, n: number): Promise<void> {
  const apps = canaryApps(kc, namespace);
  for (let i = from; i < from + n; i++) {
    await apps.create({
      metadata: { name: `app-${i}` },
      spec: { image: `example/app-${i}:v1`, imageListenPort: 8080 },
    });
    keys.push(`${namespace}/app-${i}`);
  }
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

test(
  "1 → 4 → 8 shares by rolling updates: no app is in two replicas' windows at once, every app converges",
  { timeout: 600_000 },
  async (t) => {
    const path = testKubeConfigPath();
    const common = [`--kubeconfig=${path}`, `--namespaces=${namespace}`, `--lease-namespace=${namespace}`];
    const start = (identity: string, shares: number | undefined): Replica => {
      const flags = shares === undefined ? common : [...common, `--shards=${shares}`];
      const replica: Replica = { process: spawnController(flags, identity), shares };
      replicas.push(replica);
      return replica;
    };
    const stop = async (replica: Replica): Promise<void> => {
      await replica.process.kill("SIGTERM");
      replica.exitedAt = Date.now();
    };
    const converged = async (what: string, shares?: number): Promise<number> => {
      const began = Date.now();
      await eventually(
        what,
        async () => ((await unconverged(shares).catch(() => ["?"])).length === 0 ? true : undefined),
        {
          timeoutMs: 180_000,
          intervalMs: 500,
        },
      );
      return Date.now() - began;
    };

    // Two unsharded replicas (one leads, one stands by) and the first apps.
    const olds = [start("one-a", undefined), start("one-b", undefined)];
    let next = 0;
    await createApps(next, 4);
    next += 4;
    await converged("the first apps converged under the unsharded leader");

    /** A rolling update: for each old replica, one of `shares` started, apps created, then the old one stopped. */
    const roll = async (from: Replica[], shares: number, prefix: string): Promise<Replica[]> => {
      const started: Replica[] = [];
      const marks: number[] = [];
      for (const [i, old] of from.entries()) {
        const fresh = start(`${prefix}-${"ab"[i] ?? i}`, shares);
        started.push(fresh);
        await fresh.process.port();
        await sleep(4_000);
        // Work while both counts run: new apps to create children for.
        await createApps(next, 2);
        next += 2;
        await sleep(4_000);
        marks.push(Date.now());
        await stop(old);
      }
      const settle = await converged(`every app converged under ${shares} shares`, shares);
      t.diagnostic(`${shares} shares: every app converged ${settle} ms after the last old replica stopped`);
      const gaps = keys.map((key) => longestGap(replicas, key, marks.at(-1) ?? 0, Date.now()));
      t.diagnostic(
        `${shares} shares: longest time an app was in nobody's window after the last stop: ${Math.max(...gaps)} ms`,
      );
      return started;
    };
    const fours = await roll(olds, 4, "four");
    const eights = await roll(fours, 8, "eight");

    for (const replica of replicas) {
      const epoch = replica.process.logs.filter((l) => String(l["msg"]).includes("sharding epoch"));
      const took = replica.process.logs.filter((l) => l["msg"] === "took a share" || l["msg"] === "became leader");
      t.diagnostic(
        `${replica.process.identity}: ${took.length} shares taken (or led), epoch: ${epoch.map((l) => `${String(l["msg"])} ${JSON.stringify(l["waitingFor"] ?? "")}`).join(" | ")}`,
      );
    }
    const overlaps = overlappingAppTenures(replicas, keys, Date.now());
    assert.deepEqual(overlaps, [], "no app in two replicas' windows at once");
    // Every child labelled with its app's share of 8, and every app in exactly one live replica's windows now.
    const wrong = (await children()).filter((c) => {
      const key = `${namespace}/${c.metadata?.labels?.[LABELS.app] ?? ""}`;
      return c.metadata?.labels?.[LABELS.share] !== shareLabelValue(shareOf(key, 8), 8);
    });
    assert.deepEqual(
      wrong.map((c) => c.metadata?.name),
      [],
      "every child labelled with its share of 8",
    );
    for (const replica of eights) {
      assert.ok(
        replica.process.logs.some((l) => l["msg"] === "took a share"),
        `${replica.process.identity} acts on its shares`,
      );
    }

    const auditPath = process.env["CANARYAPP_AUDIT_LOG"];
    await t.test(
      "the API server's audit: no app written by two replicas in overlapping windows",
      { skip: auditPath === undefined && "no audit log: start the control plane with --audit" },
      async (s) => {
        const audit = await auditLog(auditPath ?? "", namespace, { apps: keys });
        s.diagnostic(formatAudit(audit));
        assert.deepEqual(audit.unattributed, [], "every write by a replica is for an app");
        // Each generation wrote, named by its User-Agent: the unsharded leader, and replicas of 4 and of 8.
        for (const prefix of ["one-", "four-", "eight-"]) {
          assert.ok(
            audit.replicas.some((r) => r.startsWith(prefix)),
            `writes by a ${prefix}* replica: ${audit.replicas.join(", ")}`,
          );
        }
        assert.ok(audit.handovers >= keys.length, `apps handed over: ${audit.handovers}`);
        assert.deepEqual(audit.overlaps, [], "no app written by two replicas in overlapping windows");
      },
    );
  },
);

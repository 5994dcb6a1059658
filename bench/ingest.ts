/**
 * How long the controller's caches take to load N apps' objects, by Node flags: the informer's own code
 * (parse, trim, freeze, store, add events) over lists shaped as the API server sends them (managedFields
 * included), without an API server, so that only the controller's side is timed. Each flag set runs in a
 * process of its own, three times.
 *
 *   node dist/bench/ingest.js [apps]      (default 5000: each app's CanaryApp and the children it starts with)
 *
 * Flag sets: the controller's defaults (src/node-flags.ts), the defaults without `--optimize-for-size`, and
 * V8's defaults; $INGEST_FLAGS (sets separated by `;`) replaces them. Alone in its process, with no API server
 * competing for the CPU, it does not show the garbage collection `--optimize-for-size` costs a controller's
 * start-up (ADR 0017, "Since: the garbage collector at a 5,000-app start-up").
 */
import { spawnSync } from "node:child_process";
import { fileURLToPath } from "node:url";
import { pino } from "pino";
import { createInformer } from "../src/controller/create-informer.js";
import type { ListedMeta } from "../src/kube/list-watch.js";
import type { ObjectWithMeta } from "../src/controller/informer.js";
import { ListItemReader } from "../src/kube/list-items.js";
import { GROUP, KIND, VERSION, type CanaryApp } from "../src/api/types.js";
import { CANARY_APPS, CHILD_KINDS } from "../src/kube/kinds.js";
import { benchApp } from "./apps.js";
import { firstReconcile } from "./floor.js";
import { DEFAULT_CONTROLLER_NODE_FLAGS } from "../src/node-flags.js";

/** Every field a list adds to an object: identity, version, three managers' managedFields. */
function asListed<T extends { metadata?: object }>(obj: T, app: number, k: number): T {
  return {
    ...obj,
    metadata: {
      ...obj.metadata,
      uid: `00000000-0000-0000-${String(k).padStart(4, "0")}-${String(app).padStart(12, "0")}`,
      resourceVersion: String(1000 + app),
      managedFields: ["canaryapp", "kube-controller-manager", "kubectl"].map((manager) => ({
        manager,
        operation: "Apply",
        time: "2026-11-25T10:00:00Z",
        fieldsType: "FieldsV1",
        fieldsV1: { "f:spec": { "f:replicas": {}, "f:template": { "f:spec": { "f:containers": { ".": {} } } } } },
      })),
    },
  };
}

/** A Deployment's status as the Deployment controller writes it for a rolled-out primary. */
/** The size the chunks of a response body arrive in off a TLS socket. */
const CHUNK_BYTES = 16_384;

const DEPLOYMENT_STATUS = {
  observedGeneration: 1,
  replicas: 2,
  readyReplicas: 2,
  availableReplicas: 2,
  conditions: [
    { type: "Available", status: "True", reason: "MinimumReplicasAvailable", lastUpdateTime: "2026-11-25T10:00:00Z" },
  ],
};

/**
 * The lists the controller's caches load for `apps` apps, as JSON texts by kind: each app's CanaryApp and the
 * children its first reconcile applies (the project's own planner and builders, `firstReconcile`), with what a
 * list adds to them.
 */
function lists(apps: number): Map<string, string> {
  const byKind = new Map<string, unknown[]>();
  const add = (kind: string, obj: unknown): void =>
    void (byKind.get(kind) ?? byKind.set(kind, []).get(kind))?.push(obj);
  for (let i = 0; i < apps; i++) {
    const app = { apiVersion: `${GROUP}/${VERSION}`, kind: KIND, ...benchApp(i) } as CanaryApp;
    // As created: the API server has given it a namespace and a uid (its children's owner).
    app.metadata.namespace = "bench";
    app.metadata.uid = `00000000-0000-0000-0000-${String(i).padStart(12, "0")}`;
    const { children, status } = firstReconcile(app);
    add(KIND, asListed({ ...app, status }, i, 0));
    children.forEach((child, k) =>
      add(
        child.kind,
        asListed(child.kind === "Deployment" ? { ...child, status: DEPLOYMENT_STATUS } : child, i, k + 1),
      ),
    );
  }
  return new Map(
    [...byKind].map(([kind, items]) => [kind, JSON.stringify({ metadata: { resourceVersion: "1" }, items })]),
  );
}

/** In the child process: loads `apps` apps' objects into their kinds' caches at once; prints the milliseconds. */
async function ingest(apps: number): Promise<void> {
  // As the bytes come off the socket: the reader is handed them in chunks of the size a response's arrive in.
  const bodies = new Map([...lists(apps)].map(([kind, text]) => [kind, Buffer.from(text, "utf8")]));
  // A watcher that delivers nothing: only the lists are timed.
  const watcher = {
    watch: (_path: string, _q: unknown, _cb: unknown, done: (err: unknown) => void) => {
      let timer: NodeJS.Timeout | undefined = setTimeout(() => done(undefined), 3_600_000);
      return Promise.resolve({ abort: () => (clearTimeout(timer), (timer = undefined)) });
    },
  };
  const log = pino({ level: "silent" });
  const started = performance.now();
  const informers = [...bodies].map(([kindName, body]) => {
    const kind = [...CHILD_KINDS, CANARY_APPS].find((k) => k.kind === kindName);
    if (kind === undefined) throw new Error(`ingest: no cache for ${kindName}`);
    return createInformer<ObjectWithMeta>({
      type: kind,
      // Read when asked, item by item, as a response body is (KubeRest.listEach).
      list: ({ each }) => {
        const reader = new ListItemReader((item) => each(item as ObjectWithMeta));
        for (let at = 0; at < body.length; at += CHUNK_BYTES) reader.push(body.subarray(at, at + CHUNK_BYTES));
        return Promise.resolve(reader.end() as ListedMeta);
      },
      watcher,
      log,
      ...(kind.trim !== undefined ? { transform: kind.trim as (o: ObjectWithMeta) => ObjectWithMeta } : {}),
    });
  });
  let added = 0;
  for (const informer of informers) {
    informer.onAdd(() => (added += 1));
    informer.start();
  }
  while (!informers.every((i) => i.hasSynced())) await new Promise((resolve) => setImmediate(resolve));
  const ms = performance.now() - started;
  const rssMiB = process.memoryUsage().rss / 2 ** 20;
  console.log(JSON.stringify({ ms, added, rssMiB }));
  await Promise.all(informers.map((i) => i.stop()));
}

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)] ?? 0;
}

const apps = Number(process.argv[2] ?? 5000);
if (process.argv[3] === "--child") {
  await ingest(apps);
} else {
  const sets = process.env["INGEST_FLAGS"]?.split(";").map((s) => s.split(/\s+/).filter((f) => f !== "")) ?? [
    [...DEFAULT_CONTROLLER_NODE_FLAGS],
    DEFAULT_CONTROLLER_NODE_FLAGS.filter((flag) => flag !== "--optimize-for-size"),
    [],
  ];
  const self = fileURLToPath(import.meta.url);
  console.log(`ingest: ${apps} apps, their CanaryApps and children in their kinds' caches; 3 runs per flag set`);
  console.log("| flags | load (ms), median | runs | RSS (MiB), median |");
  console.log("|---|---|---|---|");
  for (const flags of sets) {
    const runs = [0, 1, 2].map(() => {
      const run = spawnSync(process.execPath, [...flags, self, String(apps), "--child"], { encoding: "utf8" });
      if (run.status !== 0) throw new Error(`ingest with ${flags.join(" ")}: ${run.stderr}`);
      return JSON.parse(run.stdout.trim().split("\n").at(-1) ?? "{}") as { ms: number; added: number; rssMiB: number };
    });
    const ms = runs.map((r) => Math.round(r.ms));
    console.log(
      `| ${flags.join(" ") || "(V8 defaults)"} | **${median(ms)}** | ${ms.join(", ")} | ${Math.round(median(runs.map((r) => r.rssMiB)))} |`,
    );
  }
}

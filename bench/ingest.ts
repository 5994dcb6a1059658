/**
 * How long the controller's caches take to load N apps' objects, by Node flags: the informer's own code
 * (parse, trim, freeze, store, add events) over lists shaped as the API server sends them (managedFields
 * included), without an API server, so that only the controller's side is timed. Each flag set runs in a
 * process of its own, three times.
 *
 *   node dist/bench/ingest.js [apps]      (default 5000: 7 objects per app, as the caches hold them)
 *
 * Flag sets: the controller's defaults (src/node-flags.ts), the defaults without `--optimize-for-size`, and
 * V8's defaults; $INGEST_FLAGS (sets separated by `;`) replaces them. Alone in its process, with no API server
 * competing for the CPU, it does not show the garbage collection `--optimize-for-size` costs a controller's
 * start-up (ADR 0017, "Since: the garbage collector at a 5,000-app start-up").
 */
import { spawnSync } from "node:child_process";
import { fileURLToPath } from "node:url";
import { pino } from "pino";
import { createInformer, type ObjectWithMeta } from "../src/controller/informer.js";
import { trimChild, trimDeployment } from "../src/kube/trim.js";
import { DEFAULT_CONTROLLER_NODE_FLAGS } from "../src/node-flags.js";

const OBJECTS_PER_APP = 7;

/** A child as a list returns it: labels, the applied hash, three managers' managedFields, a status. */
function listed(app: number, track: string): unknown {
  const labels = {
    "app.kubernetes.io/managed-by": "canaryapp",
    "canaryapp.io/app": `app-${app}`,
    "canaryapp.io/track": track,
  };
  return {
    metadata: {
      name: `app-${app}-${track}`,
      namespace: "bench",
      uid: `00000000-0000-0000-0000-${String(app).padStart(12, "0")}`,
      resourceVersion: String(1000 + app),
      labels,
      annotations: { "canaryapp.io/applied-hash": "0123456789abcdef" },
      managedFields: ["canaryapp", "kube-controller-manager", "kubectl"].map((manager) => ({
        manager,
        operation: "Apply",
        time: "2026-11-25T10:00:00Z",
        fieldsType: "FieldsV1",
        fieldsV1: { "f:spec": { "f:replicas": {}, "f:template": { "f:spec": { "f:containers": { ".": {} } } } } },
      })),
    },
    spec: {
      replicas: 2,
      selector: { matchLabels: labels },
      template: {
        metadata: { labels },
        spec: {
          containers: [
            {
              name: "app",
              image: `example/app-${app}:v1`,
              ports: [{ containerPort: 8080, protocol: "TCP" }],
              resources: {},
              terminationMessagePath: "/dev/termination-log",
              imagePullPolicy: "IfNotPresent",
            },
          ],
          restartPolicy: "Always",
          dnsPolicy: "ClusterFirst",
        },
      },
      strategy: { type: "RollingUpdate", rollingUpdate: { maxUnavailable: 0, maxSurge: "25%" } },
    },
    status: {
      observedGeneration: 1,
      replicas: 2,
      readyReplicas: 2,
      availableReplicas: 2,
      conditions: [
        {
          type: "Available",
          status: "True",
          reason: "MinimumReplicasAvailable",
          lastUpdateTime: "2026-11-25T10:00:00Z",
        },
      ],
    },
  };
}

/** In the child process: loads `apps` apps' objects into seven caches at once; prints the milliseconds. */
async function ingest(apps: number): Promise<void> {
  const texts = Array.from({ length: OBJECTS_PER_APP }, (_, k) =>
    JSON.stringify({
      metadata: { resourceVersion: "1" },
      items: Array.from({ length: apps }, (_, app) => listed(app, `t${k}`)),
    }),
  );
  // A watcher that delivers nothing: only the lists are timed.
  const watcher = {
    watch: (_path: string, _q: unknown, _cb: unknown, done: (err: unknown) => void) => {
      let timer: NodeJS.Timeout | undefined = setTimeout(() => done(undefined), 3_600_000);
      return Promise.resolve({ abort: () => (clearTimeout(timer), (timer = undefined)) });
    },
  };
  const log = pino({ level: "silent" });
  const started = performance.now();
  const informers = texts.map((text, k) =>
    createInformer<ObjectWithMeta>({
      type: { group: "apps", version: "v1", plural: `things${k}` },
      // Parsed when asked, as the response body is.
      list: () =>
        Promise.resolve(JSON.parse(text) as { metadata: { resourceVersion: string }; items: ObjectWithMeta[] }),
      watcher,
      log,
      transform: k === 0 ? trimDeployment : trimChild,
    }),
  );
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
  console.log(
    `ingest: ${apps} apps, ${apps * OBJECTS_PER_APP} objects in ${OBJECTS_PER_APP} caches; 3 runs per flag set`,
  );
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

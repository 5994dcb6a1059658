/**
 * Where the controller's memory goes: one controller process (no heap cap) over N CanaryApps on a local
 * control plane (api profile), a heap snapshot taken at rest, and a summary of it — the constructors that
 * hold the most, by self size and by retained size (dominator tree) — with RSS and heap used from the
 * controller's own /metrics.
 *
 *   node dist/bench/memory.js [apps ...]    (default 1000; several counts give a fit in MiB per 1,000 apps)
 *
 * Writes bench-memory.json (or $BENCH_MEMORY_OUT) next to where it runs.
 */
import { mkdtemp, readdir, readFile, rm, stat, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { startControlPlane } from "../e2e/cluster/index.js";
import { loadKubeConfig } from "../src/kube/client.js";
import { createTestNamespace } from "../test/support/kube.js";
import { spawnController } from "../test/support/process.js";
import { createApps, sleep, untilAllRouted, untilReady, untilWritesSettle } from "./apps.js";

const MiB = (bytes: number) => Math.round((bytes / 2 ** 20) * 10) / 10;

export interface Row {
  name: string;
  count: number;
  selfMiB: number;
  retainedMiB: number;
}

export interface MemoryResult {
  apps: number;
  rssMiB: number;
  heapUsedMiB: number;
  /** V8's heap as reserved (used + free pages), and memory outside it (Buffers, TLS...). */
  heapTotalMiB: number;
  externalMiB: number;
  snapshotNodes: number;
  bySelf: Row[];
  byRetained: Row[];
}

interface Snapshot {
  snapshot: {
    meta: {
      node_fields: string[];
      node_types: (string[] | string)[];
      edge_fields: string[];
      edge_types: (string[] | string)[];
    };
    root_index?: number;
  };
  nodes: number[];
  edges: number[];
  strings: string[];
}

/**
 * Summarises a .heapsnapshot: self and retained size per constructor (objects) or per type (strings,
 * code, arrays...). Retained sizes come from the dominator tree (Cooper, Harvey and Kennedy's iterative
 * algorithm over the graph in reverse post-order), summed per group over the nodes whose immediate
 * dominator is in another group, so that nested objects of one group are not counted twice.
 */
export function summarise(snap: Snapshot, top = 15): { nodes: number; bySelf: Row[]; byRetained: Row[] } {
  const meta = snap.snapshot.meta;
  const nf = meta.node_fields.length;
  const ef = meta.edge_fields.length;
  const typeOff = meta.node_fields.indexOf("type");
  const nameOff = meta.node_fields.indexOf("name");
  const sizeOff = meta.node_fields.indexOf("self_size");
  const edgeCountOff = meta.node_fields.indexOf("edge_count");
  const edgeTypeOff = meta.edge_fields.indexOf("type");
  const toOff = meta.edge_fields.indexOf("to_node");
  const nodeTypes = meta.node_types[typeOff] as string[];
  const edgeTypes = meta.edge_types[edgeTypeOff] as string[];
  const weak = edgeTypes.indexOf("weak");
  const n = snap.nodes.length / nf;

  const group = new Array<string>(n);
  const self = new Float64Array(n);
  const firstEdge = new Uint32Array(n + 1);
  for (let i = 0, e = 0; i < n; i++) {
    firstEdge[i] = e;
    e += snap.nodes[i * nf + edgeCountOff]! * ef;
    const type = nodeTypes[snap.nodes[i * nf + typeOff]!]!;
    const name = snap.strings[snap.nodes[i * nf + nameOff]!]!;
    group[i] = type === "object" || type === "native" ? name : `(${type})`;
    self[i] = snap.nodes[i * nf + sizeOff]!;
    if (i === n - 1) firstEdge[n] = e;
  }
  const children = (i: number, visit: (j: number) => void) => {
    for (let e = firstEdge[i]!; e < firstEdge[i + 1]!; e += ef) {
      if (snap.edges[e + edgeTypeOff] === weak) continue;
      visit(snap.edges[e + toOff]! / nf);
    }
  };

  // Reverse post-order from the root (node 0), iteratively.
  const order = new Int32Array(n).fill(-1);
  const post: number[] = [];
  const stack: number[] = [0];
  const cursor = new Uint32Array(n);
  const seen = new Uint8Array(n);
  seen[0] = 1;
  for (let i = 0; i < n; i++) cursor[i] = firstEdge[i]!;
  while (stack.length > 0) {
    const v = stack[stack.length - 1]!;
    let pushed = false;
    while (cursor[v]! < firstEdge[v + 1]!) {
      const e = cursor[v]!;
      cursor[v] = e + ef;
      if (snap.edges[e + edgeTypeOff] === weak) continue;
      const w = snap.edges[e + toOff]! / nf;
      if (seen[w] === 0) {
        seen[w] = 1;
        stack.push(w);
        pushed = true;
        break;
      }
    }
    if (!pushed) {
      stack.pop();
      order[v] = post.length;
      post.push(v);
    }
  }
  const preds: number[][] = Array.from({ length: n }, () => []);
  for (const v of post) children(v, (w) => preds[w]!.push(v));
  const idom = new Int32Array(n).fill(-1);
  idom[0] = 0;
  const intersect = (a: number, b: number) => {
    while (a !== b) {
      while (order[a]! < order[b]!) a = idom[a]!;
      while (order[b]! < order[a]!) b = idom[b]!;
    }
    return a;
  };
  for (let changed = true; changed;) {
    changed = false;
    for (let k = post.length - 1; k >= 0; k--) {
      const v = post[k]!;
      if (v === 0) continue;
      let d = -1;
      for (const p of preds[v]!) {
        if (idom[p] === -1) continue;
        d = d === -1 ? p : intersect(p, d);
      }
      if (d !== -1 && idom[v] !== d) {
        idom[v] = d;
        changed = true;
      }
    }
  }
  const retained = Float64Array.from(self);
  for (const v of post) if (v !== 0 && idom[v]! >= 0) retained[idom[v]!]! += retained[v]!;

  const rows = new Map<string, { count: number; self: number; retained: number }>();
  for (const v of post) {
    const g = group[v]!;
    const row = rows.get(g) ?? { count: 0, self: 0, retained: 0 };
    row.count++;
    row.self += self[v]!;
    const d = idom[v]!;
    if (v !== 0 && d !== 0 && group[d] !== g) row.retained += retained[v]!;
    rows.set(g, row);
  }
  const all = [...rows].map(([name, r]) => ({
    name,
    count: r.count,
    selfMiB: MiB(r.self),
    retainedMiB: MiB(r.retained),
  }));
  return {
    nodes: n,
    bySelf: [...all].sort((a, b) => b.selfMiB - a.selfMiB).slice(0, top),
    byRetained: all
      .filter((r) => !r.name.startsWith("(GC roots") && r.name !== "(synthetic)")
      .sort((a, b) => b.retainedMiB - a.retainedMiB)
      .slice(0, top),
  };
}

async function measure(kubeconfigPath: string, apps: number, snapshotDir: string): Promise<MemoryResult> {
  const kc = loadKubeConfig(kubeconfigPath);
  const namespace = await createTestNamespace(kc, "memory");
  const previousOptions = process.env["NODE_OPTIONS"];
  process.env["NODE_OPTIONS"] = `--heapsnapshot-signal=SIGUSR2 --diagnostic-dir=${snapshotDir}`;
  const flags = [`--kubeconfig=${kubeconfigPath}`, `--namespaces=${namespace}`, "--leader-elect=false", "--workers=4"];
  const controller = spawnController(flags, `memory-${apps}`);
  if (previousOptions === undefined) delete process.env["NODE_OPTIONS"];
  else process.env["NODE_OPTIONS"] = previousOptions;
  try {
    await untilReady(controller);
    await createApps(kc, namespace, apps);
    await untilAllRouted(kc, namespace, apps);
    await untilWritesSettle(controller);
    await sleep(5000);
    const rssMiB = MiB(await controller.metric("process_resident_memory_bytes"));
    const heapUsedMiB = MiB(await controller.metric("nodejs_heap_size_used_bytes"));
    const heapTotalMiB = MiB(await controller.metric("nodejs_heap_size_total_bytes"));
    const externalMiB = MiB(await controller.metric("nodejs_external_memory_bytes"));
    controller.child.kill("SIGUSR2");
    const file = await snapshotWritten(snapshotDir);
    const summary = summarise(JSON.parse(await readFile(file, "utf8")) as Snapshot);
    await rm(file);
    return {
      apps,
      rssMiB,
      heapUsedMiB,
      heapTotalMiB,
      externalMiB,
      snapshotNodes: summary.nodes,
      bySelf: summary.bySelf,
      byRetained: summary.byRetained,
    };
  } finally {
    await controller.kill("SIGTERM");
  }
}

/** The snapshot file, once its size has stopped changing and it ends like a complete JSON document. */
async function snapshotWritten(dir: string): Promise<string> {
  for (let last = -1; ; await sleep(1000)) {
    const name = (await readdir(dir)).find((f) => f.endsWith(".heapsnapshot"));
    if (name === undefined) continue;
    const file = join(dir, name);
    const size = (await stat(file)).size;
    if (size > 0 && size === last) return file;
    last = size;
  }
}

function table(title: string, rows: Row[]): void {
  console.log(title);
  for (const r of rows)
    console.log(
      `  ${r.name.slice(0, 48).padEnd(48)} ${String(r.count).padStart(9)} ${String(r.selfMiB).padStart(8)} MiB self ${String(r.retainedMiB).padStart(8)} MiB retained`,
    );
}

/** Least-squares slope and intercept of y over x. */
function fit(points: [number, number][]): { slope: number; intercept: number } {
  const mx = points.reduce((s, [x]) => s + x, 0) / points.length;
  const my = points.reduce((s, [, y]) => s + y, 0) / points.length;
  const sxx = points.reduce((s, [x]) => s + (x - mx) ** 2, 0);
  const slope = sxx === 0 ? 0 : points.reduce((s, [x, y]) => s + (x - mx) * (y - my), 0) / sxx;
  return { slope, intercept: my - slope * mx };
}

const counts = process.argv.slice(2).map(Number);
if (counts.length === 0) counts.push(1000);
const controlPlane = await startControlPlane({ profile: "api" });
const snapshotDir = await mkdtemp(join(tmpdir(), "canaryapp-heap-"));
const results: MemoryResult[] = [];
try {
  for (const apps of counts) {
    const r = await measure(controlPlane.kubeconfigPath, apps, snapshotDir);
    results.push(r);
    console.log(
      `memory: ${apps} apps at rest: rss ${r.rssMiB} MiB, heap used ${r.heapUsedMiB} MiB of ${r.heapTotalMiB}, external ${r.externalMiB} MiB (${r.snapshotNodes} heap nodes)`,
    );
    table(`top ${r.bySelf.length} by self size`, r.bySelf);
    table(`top ${r.byRetained.length} by retained size`, r.byRetained);
  }
  if (results.length > 1) {
    const rss = fit(results.map((r) => [r.apps / 1000, r.rssMiB]));
    const heap = fit(results.map((r) => [r.apps / 1000, r.heapUsedMiB]));
    console.log(
      `memory: fit over ${counts.join("/")} apps: rss ${rss.slope.toFixed(1)} MiB per 1,000 apps + ${rss.intercept.toFixed(0)} MiB; heap used ${heap.slope.toFixed(1)} MiB per 1,000 apps + ${heap.intercept.toFixed(0)} MiB`,
    );
  }
  await writeFile(process.env["BENCH_MEMORY_OUT"] ?? "bench-memory.json", JSON.stringify(results, null, 2) + "\n");
} finally {
  await rm(snapshotDir, { recursive: true, force: true });
  await controlPlane.stop();
}

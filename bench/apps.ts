/**
 * The work the scale and memory benches share: seed-like CanaryApps created 20 at a time, as a client with 20
 * requests in flight would, and the waits around them, read from the controller's own /metrics.
 */
import { readdirSync, readFileSync } from "node:fs";
import { CustomObjectsApi, Watch } from "@kubernetes/client-node";
import type { CanaryApp } from "../src/api/types.js";
import { loadKubeConfig, type PooledKubeConfig } from "../src/kube/client.js";
import { canaryApps } from "../test/support/kube.js";
import type { ControllerProcess } from "../test/support/process.js";

export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** A process's CPU time (user and system) from /proc, in seconds: reading it costs the process nothing. */
export function cpuSecondsOf(pid: number): number {
  const fields = readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1]?.split(" ") ?? [];
  // utime and stime are fields 14 and 15 of stat, 12 and 13 after the command's name; in clock ticks (100/s).
  return (Number(fields[11]) + Number(fields[12])) / 100;
}

/**
 * The PID of the kube-apiserver on this machine that serves `kubeconfigPath`'s cluster (found by its
 * --secure-port in /proc), or undefined when there is none (a remote cluster).
 */
export function localApiServerPid(kubeconfigPath: string): number | undefined {
  const server = new URL(loadKubeConfig(kubeconfigPath).getCurrentCluster()?.server ?? "https://unknown");
  if (server.hostname !== "127.0.0.1" || server.port === "") return undefined;
  const port = server.port;
  for (const entry of readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    let args: string[];
    try {
      args = readFileSync(`/proc/${entry}/cmdline`, "utf8").split("\0");
    } catch {
      continue; // gone meanwhile
    }
    if (args[0]?.endsWith("kube-apiserver") === true && args.includes(`--secure-port=${port}`)) return Number(entry);
  }
  return undefined;
}

/**
 * Until process `pid` has used less than 10 % of a CPU in each of three seconds in a row (at most 90 s):
 * how long that took, in seconds.
 */
export async function untilQuiet(pid: number): Promise<number> {
  const started = Date.now();
  let quietSeconds = 0;
  let last = cpuSecondsOf(pid);
  while (quietSeconds < 3 && Date.now() - started < 90_000) {
    await sleep(1000);
    const now = cpuSecondsOf(pid);
    quietSeconds = now - last < 0.1 ? quietSeconds + 1 : 0;
    last = now;
  }
  return Math.round((Date.now() - started) / 1000);
}

/** A process's resident memory from /proc, in MiB. */
export function rssMiBOf(pid: number): number {
  const kib = /^VmRSS:\s+(\d+) kB$/m.exec(readFileSync(`/proc/${pid}/status`, "utf8"))?.[1];
  if (kib === undefined) throw new Error(`/proc/${pid}/status: no VmRSS`);
  return Number(kib) / 1024;
}

/** Until the controller's /readyz answers 200. */
export async function untilReady(controller: ControllerProcess): Promise<void> {
  while ((await fetch(`http://127.0.0.1:${await controller.port()}/readyz`)).status !== 200) await sleep(50);
}

/** Requests a client keeps in flight, as the floor does: the pace the benches hold the controller to. */
export const IN_FLIGHT = 20;

/** The i-th seed-like CanaryApp of a bench. */
export function benchApp(i: number): Omit<CanaryApp, "apiVersion" | "kind"> {
  return {
    metadata: { name: `app-${i}` },
    spec: { image: `example/app-${i}:v1`, imageListenPort: 8080, replicas: 2 },
  };
}

/** Creates `app-0` … `app-(apps-1)`, 20 requests in flight. */
export async function createApps(kc: PooledKubeConfig, namespace: string, apps: number): Promise<void> {
  const client = canaryApps(kc, namespace);
  for (let i = 0; i < apps; i += IN_FLIGHT) {
    await Promise.all(Array.from({ length: Math.min(IN_FLIGHT, apps - i) }, (_, j) => client.create(benchApp(i + j))));
  }
}

/**
 * Until every app has its VirtualService (the last child applied): one list, then a watch from it (relisted
 * if the watch ends), so waiting costs the API server what one more watcher costs, not a list of every
 * VirtualService a second (work the floor does not have).
 */
export async function untilAllRouted(kc: PooledKubeConfig, namespace: string, apps: number): Promise<void> {
  const custom = kc.makeApiClient(CustomObjectsApi);
  const path = `/apis/networking.istio.io/v1/namespaces/${namespace}/virtualservices`;
  for (;;) {
    const list = (await custom.listNamespacedCustomObject({
      group: "networking.istio.io",
      version: "v1",
      plural: "virtualservices",
      namespace,
    })) as { items: { metadata: { name: string } }[]; metadata: { resourceVersion: string } };
    const routed = new Set(list.items.map((vs) => vs.metadata.name));
    if (routed.size >= apps) return;
    const done = await new Promise<boolean>((resolve) => {
      let watching: AbortController | undefined;
      let finished = false;
      const finish = (all: boolean) => {
        finished = true;
        watching?.abort();
        resolve(all);
      };
      void new Watch(kc)
        .watch(
          path,
          { resourceVersion: list.metadata.resourceVersion },
          (type: string, vs: { metadata?: { name?: string } }) => {
            if (type === "ADDED" && vs.metadata?.name !== undefined) routed.add(vs.metadata.name);
            if (routed.size >= apps) finish(true);
          },
          () => finish(false),
        )
        .then(
          (controller) => {
            watching = controller;
            if (finished) controller.abort();
          },
          () => finish(false),
        );
    });
    if (done) return;
  }
}

/**
 * Until the controller's write counter stands still for 3 s (status writes and their watch events settled);
 * returns the count then.
 */
export async function untilWritesSettle(controller: ControllerProcess): Promise<number> {
  const writes = () => controller.metric("canaryapp_api_writes_total");
  let settled = await writes();
  for (;;) {
    await sleep(3000);
    const now = await writes();
    if (now === settled) return settled;
    settled = now;
  }
}

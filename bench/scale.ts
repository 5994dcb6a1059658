import { loadKubeConfig } from "../src/kube/client.js";
import { createTestNamespace } from "../test/support/kube.js";
import { spawnController } from "../test/support/process.js";
import { createApps, sleep, untilAllRouted, untilReady, untilWritesSettle } from "./apps.js";

export interface ScaleResult {
  apps: number;
  /** From the first create to every app's VirtualService existing. */
  secondsToAllChildren: number;
  writesWhileCreating: number;
  /** Writes during the quiet window after everything settled. */
  writesAtRest: number;
  restWindowSeconds: number;
  /** The controller process's own figures, from its /metrics. */
  rssMiB: number;
  heapUsedMiB: number;
  maxOldSpaceMiB: number;
  cpuSecondsAtRest: number;
  /** A second controller started over the same, unchanged apps (a warm restart). */
  restart: { secondsToAllReconciled: number; writes: number; events: number };
}

/**
 * Many CanaryApps against one controller process, as it runs in a cluster: time to converge, writes,
 * memory, and silence at rest — all read from the controller's own /metrics.
 */
export async function benchScale(
  kubeconfigPath: string,
  apps = 200,
  restWindowSeconds = 20,
  /** V8's old-space limit for the controller process, as a container memory limit would set it. */
  maxOldSpaceMiB = 256,
): Promise<ScaleResult> {
  const kc = loadKubeConfig(kubeconfigPath);
  const namespace = await createTestNamespace(kc, "bench");
  const previousOptions = process.env["NODE_OPTIONS"];
  process.env["NODE_OPTIONS"] = `--max-old-space-size=${maxOldSpaceMiB}`;
  const flags = [`--kubeconfig=${kubeconfigPath}`, `--namespaces=${namespace}`, "--leader-elect=false", "--workers=4"];
  const controller = spawnController(flags, "bench");
  if (previousOptions === undefined) delete process.env["NODE_OPTIONS"];
  else process.env["NODE_OPTIONS"] = previousOptions;
  const writes = () => controller.metric("canaryapp_api_writes_total");
  try {
    await untilReady(controller);
    const started = Date.now();
    await createApps(kc, namespace, apps);
    await untilAllRouted(kc, namespace, apps, 100);
    const secondsToAllChildren = (Date.now() - started) / 1000;
    // Let status writes and their watch events settle before measuring silence.
    const settled = await untilWritesSettle(controller);
    const cpuBefore = await controller.metric("process_cpu_seconds_total");
    await sleep(restWindowSeconds * 1000);
    const atRest = {
      apps,
      secondsToAllChildren,
      writesWhileCreating: settled,
      writesAtRest: (await writes()) - settled,
      restWindowSeconds,
      rssMiB: Math.round((await controller.metric("process_resident_memory_bytes")) / 2 ** 20),
      heapUsedMiB: Math.round((await controller.metric("nodejs_heap_size_used_bytes")) / 2 ** 20),
      maxOldSpaceMiB,
      cpuSecondsAtRest: (await controller.metric("process_cpu_seconds_total")) - cpuBefore,
    };
    await controller.kill("SIGTERM");
    return { ...atRest, restart: await warmRestart(flags, apps) };
  } finally {
    await controller.kill("SIGTERM");
  }
}

/** Starts a controller over `apps` settled apps: how long until each is reconciled, and what it wrote. */
async function warmRestart(flags: string[], apps: number): Promise<ScaleResult["restart"]> {
  const controller = spawnController(flags, "bench-restart");
  try {
    const started = Date.now();
    const reconciles = () => controller.metric("canaryapp_reconcile_duration_seconds_count");
    while ((await reconciles()) < apps) await sleep(100);
    const secondsToAllReconciled = (Date.now() - started) / 1000;
    await sleep(3000);
    return {
      secondsToAllReconciled,
      writes: await controller.metric("canaryapp_api_writes_total"),
      events: await eventWrites(await controller.port()),
    };
  } finally {
    await controller.kill("SIGTERM");
  }
}

/** Event writes counted by the controller at `port` (canaryapp_api_writes_total with verb="event"). */
async function eventWrites(port: number): Promise<number> {
  const text = await (await fetch(`http://127.0.0.1:${port}/metrics`)).text();
  return text
    .split("\n")
    .filter((l) => l.startsWith("canaryapp_api_writes_total{") && l.includes('verb="event"'))
    .reduce((sum, l) => sum + Number(l.slice(l.lastIndexOf(" ") + 1)), 0);
}

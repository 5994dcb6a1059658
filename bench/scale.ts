import { CustomObjectsApi } from "@kubernetes/client-node";
import { loadKubeConfig } from "../src/kube/client.js";
import { canaryApps, createTestNamespace } from "../test/support/kube.js";
import { spawnController } from "../test/support/process.js";

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
  const controller = spawnController(
    [`--kubeconfig=${kubeconfigPath}`, `--namespaces=${namespace}`, "--leader-elect=false", "--workers=4"],
    "bench",
  );
  if (previousOptions === undefined) delete process.env["NODE_OPTIONS"];
  else process.env["NODE_OPTIONS"] = previousOptions;
  const client = canaryApps(kc, namespace);
  const custom = kc.makeApiClient(CustomObjectsApi);
  const writes = () => controller.metric("canaryapp_api_writes_total");
  try {
    while ((await fetch(`http://127.0.0.1:${await controller.port()}/readyz`)).status !== 200) await sleep(50);
    const started = Date.now();
    for (let i = 0; i < apps; i += 20) {
      await Promise.all(
        Array.from({ length: Math.min(20, apps - i) }, (_, j) =>
          client.create({
            metadata: { name: `app-${i + j}` },
            spec: { image: `example/app-${i + j}:v1`, imageListenPort: 8080, replicas: 2 },
          }),
        ),
      );
    }
    for (;;) {
      const list = (await custom.listNamespacedCustomObject({
        group: "networking.istio.io",
        version: "v1",
        plural: "virtualservices",
        namespace,
      })) as { items: unknown[] };
      if (list.items.length >= apps) break;
      await sleep(100);
    }
    const secondsToAllChildren = (Date.now() - started) / 1000;
    // Let status writes and their watch events settle before measuring silence.
    let settled = await writes();
    for (;;) {
      await sleep(3000);
      const now = await writes();
      if (now === settled) break;
      settled = now;
    }
    const cpuBefore = await controller.metric("process_cpu_seconds_total");
    await sleep(restWindowSeconds * 1000);
    return {
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
  } finally {
    await controller.kill("SIGTERM");
  }
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

import { pino } from "pino";
import { CustomObjectsApi, KubeConfig } from "@kubernetes/client-node";
import { startController } from "../src/app.js";
import { loadConfig } from "../src/config.js";
import { RecordingObserver } from "../test/support/controller.js";
import { canaryApps, createTestNamespace } from "../test/support/kube.js";

export interface ScaleResult {
  apps: number;
  /** From the first create to every app's VirtualService existing. */
  secondsToAllChildren: number;
  writesWhileCreating: number;
  /** Writes during the quiet window after everything settled. */
  writesAtRest: number;
  restWindowSeconds: number;
  rssMiB: number;
  heapUsedMiB: number;
}

/** Many CanaryApps against one controller: time to converge, writes, memory, and silence at rest. */
export async function benchScale(kubeconfigPath: string, apps = 200, restWindowSeconds = 20): Promise<ScaleResult> {
  const kc = new KubeConfig();
  kc.loadFromFile(kubeconfigPath);
  const namespace = await createTestNamespace(kc, "bench");
  const config = loadConfig([`--namespaces=${namespace}`, "--leader-elect=false", "--workers=4"], {
    KUBECONFIG: kubeconfigPath,
  });
  const observer = new RecordingObserver();
  const controller = startController({ config, log: pino({ level: "silent" }), observer });
  const client = canaryApps(kc, namespace);
  const custom = kc.makeApiClient(CustomObjectsApi);
  try {
    while (!controller.ready()) await sleep(50);
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
    await waitForQuiet(observer, 3000);
    const writesWhileCreating = observer.writes.length;
    const restStart = Date.now();
    await sleep(restWindowSeconds * 1000);
    global.gc?.();
    const memory = process.memoryUsage();
    return {
      apps,
      secondsToAllChildren,
      writesWhileCreating,
      writesAtRest: observer.writesSince(restStart).length,
      restWindowSeconds,
      rssMiB: Math.round(memory.rss / 2 ** 20),
      heapUsedMiB: Math.round(memory.heapUsed / 2 ** 20),
    };
  } finally {
    await controller.stop();
  }
}

async function waitForQuiet(observer: RecordingObserver, quietMs: number): Promise<void> {
  for (;;) {
    const last = observer.writes.at(-1)?.at ?? 0;
    if (Date.now() - last >= quietMs) return;
    await sleep(250);
  }
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

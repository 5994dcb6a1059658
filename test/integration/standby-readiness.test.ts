/**
 * Readiness of a standby means its caches are synced: a replica that cannot reach the API server (its
 * connection goes through a proxy the test holds down) is not ready, and becomes ready once it can list.
 */
import assert from "node:assert/strict";
import { readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { setTimeout as sleep } from "node:timers/promises";
import { createTestNamespace, eventually, testKubeConfig } from "../support/kube.js";
import { spawnController, type ControllerProcess } from "../support/process.js";
import { startTcpProxy, type TcpProxy } from "../support/tcp-proxy.js";

describe("standby readiness", () => {
  const kc = testKubeConfig();
  let namespace: string;
  let proxy: TcpProxy;
  let replica: ControllerProcess | undefined;

  before(async () => {
    namespace = await createTestNamespace(kc, "standby");
  });
  after(async () => {
    await replica?.kill("SIGKILL");
    await proxy.stop();
  });

  test("/readyz is 503 until the caches have synced", { timeout: 60_000 }, async () => {
    const server = new URL(kc.getCurrentCluster()?.server ?? "");
    proxy = await startTcpProxy(`${server.hostname}:${server.port}`);
    const proxied = new URL(proxy.url);
    const kubeconfigPath = join(tmpdir(), `standby-${namespace}.kubeconfig`);
    const original = readFileSync(process.env["KUBECONFIG"] ?? "", "utf8");
    writeFileSync(kubeconfigPath, original.replaceAll(server.origin, `https://${proxied.host}`));
    await proxy.down();

    replica = spawnController(
      [`--kubeconfig=${kubeconfigPath}`, `--namespaces=${namespace}`, `--lease-namespace=${namespace}`],
      "replica-cut-off",
    );
    const port = await replica.port();
    const readyz = async () => (await fetch(`http://127.0.0.1:${port}/readyz`)).status;
    for (let i = 0; i < 10; i++) {
      assert.equal(await readyz(), 503, "not ready while it cannot list anything");
      await sleep(300);
    }
    await proxy.up();
    await eventually("ready once its caches are synced", async () => ((await readyz()) === 200 ? true : undefined), {
      timeoutMs: 40_000,
      intervalMs: 200,
    });
  });
});

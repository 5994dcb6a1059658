import { describe, test } from "node:test";
import assert from "node:assert/strict";
import { mkdirSync, mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { delimiter, join } from "node:path";
import { createClients, loadKubeConfig } from "./client.js";

function kubeconfigFile(dir: string, name: string, server: string): string {
  const file = join(dir, name);
  writeFileSync(
    file,
    [
      "apiVersion: v1",
      "kind: Config",
      `current-context: ${name}`,
      "clusters:",
      `- name: ${name}`,
      `  cluster: { server: "${server}" }`,
      "users:",
      `- name: ${name}`,
      "  user: { token: abc }",
      "contexts:",
      `- name: ${name}`,
      `  context: { cluster: ${name}, user: ${name} }`,
    ].join("\n"),
  );
  return file;
}

describe("loadKubeConfig", () => {
  const dir = mkdtempSync(join(tmpdir(), "kubeconfig-"));
  const a = kubeconfigFile(dir, "a", "https://a.example:6443");
  const b = kubeconfigFile(dir, "b", "https://b.example:6443");

  test("an explicit path wins over $KUBECONFIG", () => {
    const kc = loadKubeConfig(a, { env: { KUBECONFIG: b } });
    assert.equal(kc.getCurrentCluster()?.server, "https://a.example:6443");
  });

  test("$KUBECONFIG with several files merges them, the first one's context current", () => {
    const kc = loadKubeConfig(undefined, { env: { KUBECONFIG: `${a}${delimiter}${b}` } });
    assert.equal(kc.getCurrentContext(), "a");
    assert.deepEqual(
      kc
        .getClusters()
        .map((c) => c.name)
        .sort(),
      ["a", "b"],
    );
  });

  test("falls back to ~/.kube/config", () => {
    const home = mkdtempSync(join(tmpdir(), "home-"));
    mkdirSync(join(home, ".kube"));
    kubeconfigFile(join(home, ".kube"), "config", "https://home.example");
    const kc = loadKubeConfig(undefined, { env: {}, home });
    assert.equal(kc.getCurrentCluster()?.server, "https://home.example");
  });

  test("in a cluster, the service account wins over ~/.kube/config", () => {
    const kc = loadKubeConfig(undefined, {
      env: { KUBERNETES_SERVICE_HOST: "10.0.0.1" },
      home: "/nonexistent",
      fileExists: () => true,
    });
    assert.equal(kc.getCurrentContext(), "inClusterContext");
  });

  test("without any source it fails and says where it looked", () => {
    assert.throws(
      () => loadKubeConfig(undefined, { env: {}, home: "/nonexistent", fileExists: () => false }),
      /no kubeconfig: .*\/nonexistent\/\.kube\/config is missing/,
    );
  });

  test("createClients builds every client from one config", () => {
    const clients = createClients(loadKubeConfig(a, { env: {} }));
    assert.ok(clients.core && clients.apps && clients.coordination && clients.customObjects && clients.objects);
    assert.equal(clients.watch.config, clients.kubeConfig);
  });
});

import { randomBytes } from "node:crypto";
import { ApiException, CoreV1Api, CustomObjectsApi, PatchStrategy, setHeaderOptions } from "@kubernetes/client-node";
import { waitFor } from "../../e2e/cluster/wait.js";
import { GROUP, PLURAL, TEMPLATE_KINDS, VERSION } from "../../src/api/types.js";
import type { CanaryAnalysisTemplate, CanaryApp } from "../../src/api/types.js";
import { loadKubeConfig, type PooledKubeConfig } from "../../src/kube/client.js";

type KubeConfig = PooledKubeConfig;

/** The kubeconfig path of the control plane a test runs against (set by e2e/cluster/with-cluster). */
export function testKubeConfigPath(): string {
  const path = process.env["KUBECONFIG"];
  if (!path) throw new Error("KUBECONFIG is not set: run these tests with `make test-integration` or `make test-e2e`");
  return path;
}

/** The KubeConfig of the control plane a test runs against. */
export function testKubeConfig(): PooledKubeConfig {
  return loadKubeConfig(testKubeConfigPath());
}

/** A fresh namespace for one test file, so files never see each other's objects. */
export async function createTestNamespace(kc: KubeConfig, prefix: string): Promise<string> {
  const name = `${prefix}-${randomBytes(3).toString("hex")}`;
  await kc.makeApiClient(CoreV1Api).createNamespace({ body: { metadata: { name } } });
  return name;
}

/** Request options that make a client-node patch a JSON merge patch (its default is a JSON patch). */
export const MERGE_PATCH = setHeaderOptions("Content-Type", PatchStrategy.MergePatch);

/** Typed access to CanaryApps in one namespace. */
export function canaryApps(kc: KubeConfig, namespace: string) {
  const api = kc.makeApiClient(CustomObjectsApi);
  const ref = { group: GROUP, version: VERSION, plural: PLURAL, namespace };
  return {
    create: async (app: Omit<CanaryApp, "apiVersion" | "kind">) =>
      (await api.createNamespacedCustomObject({
        ...ref,
        body: { apiVersion: `${GROUP}/${VERSION}`, kind: "CanaryApp", ...app },
      })) as CanaryApp,
    get: async (name: string) => (await api.getNamespacedCustomObject({ ...ref, name })) as CanaryApp,
    delete: async (name: string) => {
      await api.deleteNamespacedCustomObject({ ...ref, name });
    },
    patchSpec: async (name: string, spec: Partial<CanaryApp["spec"]>) =>
      (await api.patchNamespacedCustomObject({ ...ref, name, body: { spec } }, MERGE_PATCH)) as CanaryApp,
    annotate: async (name: string, annotations: Record<string, string | null>) =>
      (await api.patchNamespacedCustomObject(
        { ...ref, name, body: { metadata: { annotations } } },
        MERGE_PATCH,
      )) as CanaryApp,
  };
}

/** The API server's message for a rejected request, for asserting on what a user would read. */
export function rejectionMessage(error: unknown): string {
  if (error instanceof ApiException) {
    const body: unknown = typeof error.body === "string" ? safeJson(error.body) : error.body;
    const message = (body as { message?: unknown } | undefined)?.message;
    return typeof message === "string" ? message : String(error.body);
  }
  return error instanceof Error ? error.message : String(error);
}

function safeJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
}

/** Polls until `check` returns a value other than undefined, or fails with the last error as cause. */
export function eventually<T>(
  what: string,
  check: () => Promise<T | undefined> | T | undefined,
  { timeoutMs = 20_000, intervalMs = 100 } = {},
): Promise<T> {
  return waitFor(`waiting for ${what}`, async () => check(), { timeoutMs, intervalMs });
}

/**
 * Typed access to the analysis templates (ADR 0031): CanaryAnalysisTemplates in `namespace`, or with
 * `namespace` undefined the ClusterCanaryAnalysisTemplates.
 */
export function analysisTemplates(kc: KubeConfig, namespace: string | undefined) {
  const api = kc.makeApiClient(CustomObjectsApi);
  const kind = namespace === undefined ? TEMPLATE_KINDS.cluster : TEMPLATE_KINDS.namespaced;
  const ref = { group: GROUP, version: VERSION, plural: kind.plural };
  return {
    create: async (template: Omit<CanaryAnalysisTemplate, "apiVersion" | "kind">) => {
      const body = { apiVersion: `${GROUP}/${VERSION}`, kind: kind.kind, ...template };
      return (await (namespace === undefined
        ? api.createClusterCustomObject({ ...ref, body })
        : api.createNamespacedCustomObject({ ...ref, namespace, body }))) as CanaryAnalysisTemplate;
    },
    patchSpec: async (name: string, spec: Partial<CanaryAnalysisTemplate["spec"]>) =>
      (await (namespace === undefined
        ? api.patchClusterCustomObject({ ...ref, name, body: { spec } }, MERGE_PATCH)
        : api.patchNamespacedCustomObject(
            { ...ref, namespace, name, body: { spec } },
            MERGE_PATCH,
          ))) as CanaryAnalysisTemplate,
    delete: async (name: string) => {
      await (namespace === undefined
        ? api.deleteClusterCustomObject({ ...ref, name })
        : api.deleteNamespacedCustomObject({ ...ref, namespace, name }));
    },
  };
}

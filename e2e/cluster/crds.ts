import { readdir, readFile } from "node:fs/promises";
import { join } from "node:path";
import { type ApiextensionsV1Api, loadAllYaml, type V1CustomResourceDefinition } from "@kubernetes/client-node";
import { waitFor } from "./wait.js";

/** The Istio CRDs the controller uses; the rest of Istio's file is left out to keep startup fast. */
export const ISTIO_CRD_NAMES: readonly string[] = [
  "virtualservices.networking.istio.io",
  "destinationrules.networking.istio.io",
  "gateways.networking.istio.io",
];

/**
 * The Gateway API CRDs (standard channel) the gateway-api traffic router writes or refers to: HTTPRoutes, the
 * Gateways and GatewayClasses they attach to, and the ReferenceGrants that let a route cross namespaces.
 */
export const GATEWAY_API_CRD_NAMES: readonly string[] = [
  "httproutes.gateway.networking.k8s.io",
  "gateways.gateway.networking.k8s.io",
  "gatewayclasses.gateway.networking.k8s.io",
  "referencegrants.gateway.networking.k8s.io",
];

// loadAllYaml returns client-node models (`x-kubernetes-*` keys renamed to model fields), so CRDs must be sent
// back through the typed API, whose serializer restores the wire names.
function crdsOf(docs: unknown[], file: string): V1CustomResourceDefinition[] {
  return docs.filter((d): d is V1CustomResourceDefinition => {
    const m = d as V1CustomResourceDefinition | null;
    if (m?.kind !== "CustomResourceDefinition") return false;
    if (!m.metadata?.name) throw new Error(`${file}: a CustomResourceDefinition without metadata.name`);
    return true;
  });
}

async function crdsInFile(file: string): Promise<V1CustomResourceDefinition[]> {
  return crdsOf(loadAllYaml(await readFile(file, "utf8")) as unknown[], file);
}

/** The CRDs of `file` named in `names`, each of which must be there: a pinned version that lacks one is an error. */
async function wantedCrds(file: string, names: readonly string[]): Promise<V1CustomResourceDefinition[]> {
  const wanted = (await crdsInFile(file)).filter((c) => names.includes(c.metadata?.name ?? ""));
  const missing = names.filter((n) => !wanted.some((c) => c.metadata?.name === n));
  if (missing.length > 0) throw new Error(`${file}: no CRD named ${missing.join(", ")}`);
  return wanted;
}

/**
 * Every CRD in the YAML files of `dir` (ours), plus the wanted ones from Istio's generated CRD file and, when its
 * file is given, the Gateway API's ({@link GATEWAY_API_CRD_NAMES}), in that order.
 */
export async function loadCrds(
  dir: string,
  istioFile: string,
  gatewayApiFile?: string,
): Promise<V1CustomResourceDefinition[]> {
  const files = (await readdir(dir)).filter((f) => /\.ya?ml$/.test(f)).sort();
  const ours = await Promise.all(files.map((f) => crdsInFile(join(dir, f))));
  const istio = await wantedCrds(istioFile, ISTIO_CRD_NAMES);
  const gatewayApi = gatewayApiFile === undefined ? [] : await wantedCrds(gatewayApiFile, GATEWAY_API_CRD_NAMES);
  return [...ours.flat(), ...istio, ...gatewayApi];
}

/** Creates the CRDs and waits until the API server serves each of them (condition Established). */
export async function installCrds(
  api: ApiextensionsV1Api,
  crds: readonly V1CustomResourceDefinition[],
  timeoutMs: number,
): Promise<void> {
  await Promise.all(
    crds.map(async (crd) => {
      const name = crd.metadata?.name ?? "";
      try {
        await api.createCustomResourceDefinition({ body: crd });
      } catch (cause) {
        throw new Error(`CustomResourceDefinition ${name}: create failed`, { cause });
      }
      await waitFor(
        `CustomResourceDefinition ${name}: Established`,
        async () => {
          const got = await api.readCustomResourceDefinition({ name });
          const established = got.status?.conditions?.some((c) => c.type === "Established" && c.status === "True");
          return established ? true : undefined;
        },
        { timeoutMs, intervalMs: 50 },
      );
    }),
  );
}

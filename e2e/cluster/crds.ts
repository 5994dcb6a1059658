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

/** Every CRD in the YAML files of `dir` (ours), plus the wanted ones from Istio's generated CRD file. */
export async function loadCrds(dir: string, istioFile: string): Promise<V1CustomResourceDefinition[]> {
  const files = (await readdir(dir)).filter((f) => /\.ya?ml$/.test(f)).sort();
  const ours = await Promise.all(files.map((f) => crdsInFile(join(dir, f))));
  const istio = (await crdsInFile(istioFile)).filter((c) => ISTIO_CRD_NAMES.includes(c.metadata?.name ?? ""));
  const missing = ISTIO_CRD_NAMES.filter((n) => !istio.some((c) => c.metadata?.name === n));
  if (missing.length > 0) throw new Error(`${istioFile}: no CRD named ${missing.join(", ")}`);
  return [...ours.flat(), ...istio];
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

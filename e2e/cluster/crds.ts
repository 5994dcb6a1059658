import { readdir, readFile } from "node:fs/promises";
import { join } from "node:path";
import { loadAllYaml } from "@kubernetes/client-node";
import type { AdminClient } from "./admin-client.js";
import { waitFor } from "./wait.js";

/** The Istio CRDs the controller uses; the rest of Istio's file is left out to keep startup fast. */
export const ISTIO_CRD_NAMES: readonly string[] = [
  "virtualservices.networking.istio.io",
  "destinationrules.networking.istio.io",
  "gateways.networking.istio.io",
];

const CRD_PATH = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions";

interface CrdManifest {
  kind?: string;
  metadata?: { name?: string };
  status?: { conditions?: { type?: string; status?: string }[] };
}

function crdsOf(docs: unknown[], file: string): CrdManifest[] {
  return docs.filter((d): d is CrdManifest => {
    const m = d as CrdManifest | null;
    if (m?.kind !== "CustomResourceDefinition") return false;
    if (!m.metadata?.name) throw new Error(`${file}: a CustomResourceDefinition without metadata.name`);
    return true;
  });
}

/** Every CRD in the YAML files of `dir` (ours), plus the wanted ones from Istio's generated CRD file. */
export async function loadCrds(dir: string, istioFile: string): Promise<CrdManifest[]> {
  const files = (await readdir(dir)).filter((f) => /\.ya?ml$/.test(f)).sort();
  const ours = await Promise.all(
    files.map(async (f) => crdsOf(loadAllYaml(await readFile(join(dir, f), "utf8")) as unknown[], join(dir, f))),
  );
  const istio = crdsOf(loadAllYaml(await readFile(istioFile, "utf8")) as unknown[], istioFile).filter((c) =>
    ISTIO_CRD_NAMES.includes(c.metadata?.name ?? ""),
  );
  const missing = ISTIO_CRD_NAMES.filter((n) => !istio.some((c) => c.metadata?.name === n));
  if (missing.length > 0) throw new Error(`${istioFile}: no CRD named ${missing.join(", ")}`);
  return [...ours.flat(), ...istio];
}

/** Creates the CRDs and waits until the API server serves each of them (condition Established). */
export async function installCrds(client: AdminClient, crds: readonly CrdManifest[], timeoutMs: number): Promise<void> {
  await Promise.all(
    crds.map(async (crd) => {
      const name = crd.metadata?.name ?? "";
      try {
        await client.expect("POST", CRD_PATH, crd);
      } catch (cause) {
        throw new Error(`CustomResourceDefinition ${name}: create failed`, { cause });
      }
      await waitFor(
        `CustomResourceDefinition ${name}: Established`,
        async () => {
          const res = await client.expect("GET", `${CRD_PATH}/${name}`);
          const conditions = (res.body as CrdManifest).status?.conditions ?? [];
          return conditions.some((c) => c.type === "Established" && c.status === "True") ? true : undefined;
        },
        { timeoutMs, intervalMs: 50 },
      );
    }),
  );
}

/**
 * Which CRDs a control plane installs: ours, Istio's three, and the Gateway API's four only when asked, each wanted
 * one required of its file. No cluster: files in a temporary folder, and the pinned Gateway API file that
 * `make gateway-api-crds` fetches (a prerequisite of `make test-e2e`, which runs this file).
 */
import assert from "node:assert/strict";
import { mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { GATEWAY_API_CRD_NAMES, ISTIO_CRD_NAMES, loadCrds } from "./crds.js";
import { PrerequisiteError, requireGatewayApiCrds, resolveToolchain, type Toolchain } from "./toolchain.js";

/** A minimal valid CRD document named `<plural>.<group>`. */
function crdYaml(name: string): string {
  const [plural = "", ...group] = name.split(".");
  return [
    "apiVersion: apiextensions.k8s.io/v1",
    "kind: CustomResourceDefinition",
    `metadata: { name: ${name} }`,
    "spec:",
    `  group: ${group.join(".")}`,
    `  names: { plural: ${plural}, kind: K${plural} }`,
    "  scope: Namespaced",
    "  versions: [{ name: v1, served: true, storage: true, schema: { openAPIV3Schema: { type: object } } }]",
  ].join("\n");
}

/** A multi-document YAML file: the given CRDs, and a document of another kind that must be skipped. */
function crdFile(names: readonly string[]): string {
  const other = "apiVersion: admissionregistration.k8s.io/v1\nkind: ValidatingAdmissionPolicy\nmetadata: { name: x }";
  return [...names.map(crdYaml), other].join("\n---\n");
}

const namesOf = (crds: { metadata?: { name?: string } }[]): string[] => crds.map((c) => c.metadata?.name ?? "");

describe("CRDs of the local control plane", () => {
  let dir: string;
  let ours: string;
  let istio: string;
  let gatewayApi: string;
  const unwanted = "grpcroutes.gateway.networking.k8s.io";

  before(async () => {
    dir = await mkdtemp(join(tmpdir(), "canaryapp-crds-"));
    ours = join(dir, "ours");
    await mkdir(ours);
    await writeFile(join(ours, "canaryapp.yaml"), crdYaml("canaryapps.canaryapp.io"));
    istio = join(dir, "istio.yaml");
    await writeFile(istio, crdFile([...ISTIO_CRD_NAMES, "sidecars.networking.istio.io"]));
    gatewayApi = join(dir, "gateway-api.yaml");
    await writeFile(gatewayApi, crdFile([unwanted, ...GATEWAY_API_CRD_NAMES]));
  });
  after(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  test("without a Gateway API file: ours and Istio's three, as before", async () => {
    assert.deepEqual(namesOf(await loadCrds(ours, istio)), ["canaryapps.canaryapp.io", ...ISTIO_CRD_NAMES]);
  });

  test("with one: its four after ours and Istio's, and no other route kind", async () => {
    const names = namesOf(await loadCrds(ours, istio, gatewayApi));
    assert.deepEqual(names, ["canaryapps.canaryapp.io", ...ISTIO_CRD_NAMES, ...GATEWAY_API_CRD_NAMES]);
    assert.ok(!names.includes(unwanted), `${unwanted} is not installed`);
  });

  test("a Gateway API file that lacks one of the four: an error naming the file and the CRD", async () => {
    const partial = join(dir, "partial.yaml");
    await writeFile(partial, crdFile(GATEWAY_API_CRD_NAMES.filter((n) => !n.startsWith("referencegrants."))));
    await assert.rejects(loadCrds(ours, istio, partial), {
      message: `${partial}: no CRD named referencegrants.gateway.networking.k8s.io`,
    });
  });

  test("a missing Gateway API file: a PrerequisiteError naming the file and `make gateway-api-crds`", () => {
    const tc = { gatewayApiCrds: join(dir, "absent", "crds.yaml") } as Toolchain;
    assert.throws(
      () => requireGatewayApiCrds(tc),
      (err: unknown) => {
        assert.ok(err instanceof PrerequisiteError, `expected a PrerequisiteError, got ${String(err)}`);
        assert.ok(err.message.includes(tc.gatewayApiCrds), err.message);
        assert.match(err.message, /run `make gateway-api-crds`/);
        return true;
      },
    );
  });

  test("the pinned file (`make gateway-api-crds`) holds the four, each serving v1", async () => {
    const tc = resolveToolchain();
    const crds = await loadCrds(tc.crdsDir, tc.istioCrds, requireGatewayApiCrds(tc));
    const fromGatewayApi = crds.filter((c) => c.spec.group === "gateway.networking.k8s.io");
    assert.deepEqual(namesOf(fromGatewayApi), [...GATEWAY_API_CRD_NAMES]);
    for (const crd of fromGatewayApi) {
      const v1 = crd.spec.versions.find((v) => v.name === "v1");
      assert.ok(v1?.served, `${crd.metadata?.name}: v1 is served`);
    }
  });
});

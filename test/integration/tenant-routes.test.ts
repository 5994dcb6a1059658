/**
 * The tenant boundary of routes and names on the real API server, with the controller running: an app's
 * route answers only for Services of its own namespace and attaches only to the mesh and the gateways the
 * operator lists, refused before any object is written (InvalidSpec with the reason, a Warning Event); the
 * operator's flags widen it; and an app whose children need a name that an earlier app owns is refused
 * without touching that app's objects, until the earlier app is gone.
 */
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { AppsV1Api, CoreV1Api, CustomObjectsApi } from "@kubernetes/client-node";
import type { CanaryApp } from "../../src/api/types.js";
import { SEED_SPEC } from "../../src/resources/fixtures.test-helpers.js";
import { runController, type TestController } from "../support/controller.js";
import { canaryApps, createTestNamespace, eventually, testKubeConfig } from "../support/kube.js";

const ISTIO = { group: "networking.istio.io", version: "v1" } as const;

describe("tenant boundary: hosts, gateways and names", () => {
  const kc = testKubeConfig();
  const core = kc.makeApiClient(CoreV1Api);
  const appsApi = kc.makeApiClient(AppsV1Api);
  const custom = kc.makeApiClient(CustomObjectsApi);
  let strict = "";
  let widened = "";
  const controllers: TestController[] = [];

  before(async () => {
    strict = await createTestNamespace(kc, "routes");
    widened = await createTestNamespace(kc, "routes-wide");
    controllers.push(runController(strict));
    controllers.push(
      runController(widened, ["--allowed-hosts=*.example.com", "--allowed-gateways=istio-system/public-gw"]),
    );
  });
  after(async () => {
    await Promise.all(controllers.map((c) => c.stop()));
    for (const ns of [strict, widened]) await core.deleteNamespace({ name: ns }).catch(() => undefined);
  });

  const virtualService = async (namespace: string, name: string) =>
    (await custom.getNamespacedCustomObject({ ...ISTIO, plural: "virtualservices", namespace, name })) as {
      spec: { hosts: string[]; gateways: string[] };
    };
  const invalidSpec = (apps: ReturnType<typeof canaryApps>, name: string, reason: string) =>
    eventually(`${name}: InvalidSpec ${reason}`, async () => {
      const app = await apps.get(name);
      const c = app.status?.conditions?.find((x) => x.type === "InvalidSpec");
      return c?.status === "True" && c.reason === reason ? { app, condition: c } : undefined;
    });
  const warning = (namespace: string, name: string, reason: string) =>
    eventually(`a ${reason} Warning about ${name}`, async () => {
      const events = await core.listNamespacedEvent({ namespace, fieldSelector: `involvedObject.name=${name}` });
      return events.items.find((e) => e.reason === reason && e.type === "Warning");
    });
  /** The names of everything in `namespace` a CanaryApp could have written. */
  const written = async (namespace: string): Promise<string[]> => {
    type Named = { items: { metadata: { name: string } }[] };
    const deployments = await appsApi.listNamespacedDeployment({ namespace });
    const services = await core.listNamespacedService({ namespace });
    const vss = (await custom.listNamespacedCustomObject({ ...ISTIO, plural: "virtualservices", namespace })) as Named;
    const drs = (await custom.listNamespacedCustomObject({ ...ISTIO, plural: "destinationrules", namespace })) as Named;
    const items = [
      ...deployments.items.map((d) => `Deployment/${d.metadata?.name ?? ""}`),
      ...services.items.map((s) => `Service/${s.metadata?.name ?? ""}`),
      ...vss.items.map((v) => `VirtualService/${v.metadata.name}`),
      ...drs.items.map((d) => `DestinationRule/${d.metadata.name}`),
    ];
    return items.sort();
  };

  const cases: { name: string; service: NonNullable<CanaryApp["spec"]["service"]>; reason: string; field: RegExp }[] = [
    {
      name: "foreign-host",
      service: { port: 80, hosts: ["payments.billing.svc.cluster.local"] },
      reason: "HostNotAllowed",
      field: /spec\.service\.hosts\[0\] "payments\.billing\.svc\.cluster\.local" is not a Service of namespace/,
    },
    {
      name: "wildcard-host",
      service: { port: 80, hosts: ["*"] },
      reason: "HostNotAllowed",
      field: /spec\.service\.hosts\[0\] "\*"/,
    },
    {
      name: "shared-gateway",
      service: { port: 80, gateways: ["istio-system/public-gw"] },
      reason: "GatewayNotAllowed",
      field: /spec\.service\.gateways\[0\] "istio-system\/public-gw" is not among the gateways/,
    },
  ];
  for (const c of cases) {
    test(`refused before anything is written: ${c.name}`, { timeout: 60_000 }, async () => {
      const apps = canaryApps(kc, strict);
      await apps.create({ metadata: { name: c.name }, spec: { ...SEED_SPEC, service: c.service } });
      const { app, condition } = await invalidSpec(apps, c.name, c.reason);
      assert.match(condition.message, c.field);
      assert.equal(app.status?.phase, "Invalid");
      const event = await warning(strict, c.name, c.reason);
      assert.match(event.message ?? "", c.field);
      assert.deepEqual(
        (await written(strict)).filter((n) => n.includes(c.name)),
        [],
        "no Deployment, Service or route of the app",
      );
    });
  }

  test("a route answers for every form of its own namespace's Service names", { timeout: 60_000 }, async () => {
    const apps = canaryApps(kc, strict);
    const hosts = ["own", `own.${strict}`, `own.${strict}.svc`, `own-alias.${strict}.svc.cluster.local`];
    await apps.create({
      metadata: { name: "own" },
      spec: { ...SEED_SPEC, service: { port: 80, hosts, gateways: ["mesh"] } },
    });
    const vs = await eventually("own's VirtualService", () => virtualService(strict, "own").catch(() => undefined));
    // Each once as Istio resolves it: "own" is the app's own host, own.<namespace>.svc.cluster.local.
    assert.deepEqual(vs.spec.hosts, [`own.${strict}.svc.cluster.local`, ...hosts.slice(1)]);
    assert.deepEqual(vs.spec.gateways, ["mesh"]);
  });

  test("the operator's --allowed-hosts and --allowed-gateways widen it", { timeout: 60_000 }, async () => {
    const apps = canaryApps(kc, widened);
    await apps.create({
      metadata: { name: "public" },
      spec: { ...SEED_SPEC, service: { port: 80, hosts: ["shop.example.com"], gateways: ["istio-system/public-gw"] } },
    });
    const vs = await eventually("public's VirtualService", () =>
      virtualService(widened, "public").catch(() => undefined),
    );
    assert.ok(vs.spec.hosts.includes("shop.example.com"));
    assert.deepEqual(vs.spec.gateways, ["mesh", "istio-system/public-gw"]);
    // The same controller still refuses what its flags do not name.
    await apps.create({
      metadata: { name: "other-gw" },
      spec: { ...SEED_SPEC, service: { port: 80, gateways: ["istio-system/private-gw"] } },
    });
    await invalidSpec(apps, "other-gw", "GatewayNotAllowed");
  });

  test(
    "an app whose children need an earlier app's names is refused, the earlier app untouched, until it is gone",
    { timeout: 90_000 },
    async () => {
      const apps = canaryApps(kc, strict);
      await apps.create({ metadata: { name: "web" }, spec: SEED_SPEC });
      // web's per-track Service web-primary, which an app named web-primary would take for its own Service.
      const before = await eventually("web's Service web-primary", () =>
        core.readNamespacedService({ namespace: strict, name: "web-primary" }).catch(() => undefined),
      );
      await eventually("web's primary Deployment", () =>
        appsApi.readNamespacedDeployment({ namespace: strict, name: "web-primary" }).catch(() => undefined),
      );
      // Created at least a second later: creation times are in whole seconds.
      await new Promise((r) => setTimeout(r, 1_100));
      await apps.create({ metadata: { name: "web-primary" }, spec: SEED_SPEC });
      const { condition } = await invalidSpec(apps, "web-primary", "NameTaken");
      assert.match(condition.message, /CanaryApp web, created earlier in namespace \S+, owns the name web-primary/);
      await warning(strict, "web-primary", "NameTaken");

      const after = await core.readNamespacedService({ namespace: strict, name: "web-primary" });
      assert.equal(after.metadata?.resourceVersion, before.metadata?.resourceVersion, "web's Service not written");
      assert.deepEqual(after.spec?.selector, before.spec?.selector);
      assert.equal(after.metadata?.labels?.["canaryapp.io/app"], "web");
      assert.deepEqual(
        (await written(strict)).filter((n) => n.includes("web-primary-")),
        [],
        "none of web-primary's own children",
      );
      const web = await apps.get("web");
      assert.notEqual(web.status?.conditions?.find((c) => c.type === "InvalidSpec")?.reason, "NameTaken");

      // web removed: its names are free, and web-primary is judged again without any change of its own. (This
      // API server runs no garbage collector: web's children stay behind, owned by an app that is gone, and
      // web-primary takes the one it needs.)
      await apps.delete("web");
      await eventually("web-primary no longer refused for its name", async () => {
        const c = (await apps.get("web-primary")).status?.conditions?.find((x) => x.type === "InvalidSpec");
        return c?.reason !== "NameTaken" ? true : undefined;
      });
      const taken = await eventually("Service web-primary selecting web-primary's own primary", async () => {
        const s = await core.readNamespacedService({ namespace: strict, name: "web-primary" });
        return s.spec?.selector?.["canaryapp.io/app"] === "web-primary" ? s : undefined;
      });
      assert.equal(taken.metadata?.ownerReferences?.[0]?.name, "web-primary");
    },
  );
});

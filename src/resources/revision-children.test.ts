import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { withDefaults } from "../api/defaults.js";
import { REVISION_ANNOTATION } from "../api/types.js";
import { istioRouter } from "../router/istio.js";
import { revisionOf } from "../identity/revision.js";
import type { Plan } from "../rollout/types.js";
import type { buildDeployment } from "../workload/deployment.js";
import { observeDeployment } from "../workload/deployment.js";
import { desiredChildren } from "./children.js";
import type { ServiceObject } from "./service.js";
import { seedApp } from "./fixtures.test-helpers.js";

const app = seedApp({ imageListenPort: 9090, pod: { env: [{ name: "FOO", value: "2" }] } });
const spec = withDefaults(app.spec);
const old = { imageListenPort: 8088, pod: { env: [{ name: "FOO", value: "1" }] } };

function plan(secondary: boolean): Plan {
  return {
    primary: { image: "img:v1", replicas: 2 },
    secondary: secondary ? { image: "img:v1", replicas: 1 } : null,
    templates: { primary: old, secondary: { imageListenPort: 9090, pod: spec.pod } },
    weights: { primary: 100, secondary: 0 },
    status: {},
    events: [],
    tellChildUpdates: true,
    removeAnnotations: [],
  };
}

describe("each track's pod template", () => {
  test("the primary keeps its template while the secondary runs spec's; each carries its revision", () => {
    const children = desiredChildren(app, spec, plan(true), istioRouter);
    const [primary, secondary] = children.apply.filter((o) => o.kind === "Deployment") as ReturnType<
      typeof buildDeployment
    >[];
    assert.deepEqual(primary?.spec.template.spec.containers[0]?.ports, [
      { name: "http", containerPort: 8088, protocol: "TCP" },
    ]);
    assert.deepEqual(primary?.spec.template.spec.containers[0]?.env, old.pod.env);
    assert.deepEqual(secondary?.spec.template.spec.containers[0]?.env, [{ name: "FOO", value: "2" }]);
    assert.equal(primary?.metadata.annotations?.[REVISION_ANNOTATION], revisionOf("img:v1", old));
    assert.equal(observeDeployment(primary)?.revision, revisionOf("img:v1", old));
  });

  test("while the tracks listen on different ports the Services target the port by name", () => {
    const services = (p: Plan) => desiredChildren(app, spec, p, istioRouter).apply.filter((o) => o.kind === "Service");
    const during = services(plan(true)) as ServiceObject[];
    assert.equal(during.length, 3);
    for (const service of during) assert.equal(service.spec.ports[0]?.targetPort, "http", service.metadata.name);
    for (const service of services(plan(false)) as ServiceObject[]) {
      assert.equal(service.spec.ports[0]?.targetPort, 8088, "the primary's port once no test runs");
    }
  });
});

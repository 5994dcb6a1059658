import { dumpYaml } from "@kubernetes/client-node";
import { FakeWorld } from "/work/main/dist/src/rollout/fake-world.test-helpers.js";
import { makeApp, V1, V2 } from "/work/main/dist/src/rollout/fixtures.test-helpers.js";

const analysis = {
  interval: "30s",
  mirror: { percent: 20, iterations: 2 },
  match: { rules: [{ headers: { "x-canary": { exact: "insider" } } }, { cookie: { name: "canary", value: "always" } }] },
  stepWeights: [25, 50],
  metrics: [{ name: "errors", query: 'sum(rate(http_errors_total{app="{{name}}"}[1m]))', max: 0 }],
};
const spec = { mesh: "gateway-api", service: { port: 80, hosts: ["web.example.com"], gateways: ["istio-system/public"] } };
const world = new FakeWorld(makeApp({ image: V1, analysis, spec }));
world.analyst = (checks) => checks.map((c) => ({ name: c.name, value: c.name === "errors" ? 0 : 120, passed: true, reason: "ok", ...(c.max !== undefined ? { max: c.max } : {}), ...(c.min !== undefined ? { min: c.min } : {}) }));
world.runToRest();
world.setImage(V2);
const captured = {};
const orig = world.observe.bind(world);
let notCarried = false;
world.observe = () => {
  const o = orig();
  return notCarried ? { ...o, routedWeights: null, routeNotCarried: { reason: "RouteNotAccepted", message: "HTTPRoute web: parent Gateway istio-system/public: Accepted False (NotAllowedByListeners: no listener of the Gateway allows routes from namespace shop)" } } : o;
};
for (let i = 0; i < 400; i++) {
  const { plan } = world.reconcile();
  const s = world.app.status;
  const c = s?.canary;
  if (c?.stage === "Stepping" && c.step === 1 && s.weights?.mirror !== undefined && c.lastAnalysis && c.stepRoutedAt) captured.mirror = structuredClone(world.app);
  if (c?.stage === "Stepping" && c.step === 2 && s.weights?.match === true && c.lastAnalysis && c.stepRoutedAt) captured.ab = structuredClone(world.app);
  if (c?.stage === "Stepping" && c.step === 3 && !notCarried) { notCarried = true; }
  if (notCarried && c?.step === 3 && c.stepRoutedAt === undefined && (s.message ?? "").includes("waits for the route")) { captured.notCarried = structuredClone(world.app); break; }
  if (process.env.DEBUG) console.log(world.time, s?.phase, c?.stage, c?.step, JSON.stringify(s?.weights), !!c?.lastAnalysis, c?.stepRoutedAt);
  world.time += plan.requeueAfterSeconds ?? 5;
}
for (const [k, v] of Object.entries(captured)) {
  console.log(`=== ${k}`);
  console.log(dumpYaml(v));
}

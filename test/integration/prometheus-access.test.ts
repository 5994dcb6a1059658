/**
 * The controller as a confused deputy, on the real API server with a real Prometheus: a tenant who may edit
 * CanaryApps but not read Secrets tries to make the controller send it a ServiceAccount token, or to make it
 * query an address outside the controller's URL policy. Listeners on 127.0.0.1 count every TCP connection
 * they receive; a refusal must leave them at 0 and say why on the CanaryApp. A Secret made for Prometheus
 * still works, and its token shows up nowhere but in the request to Prometheus.
 */
import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { Writable } from "node:stream";
import { after, before, describe, test } from "node:test";
import { setTimeout as sleep } from "node:timers/promises";
import { pino } from "pino";
import type { CanaryApp } from "../../src/api/types.js";
import { startController, type RunningController } from "../../src/app.js";
import { loadConfig } from "../../src/config.js";
import { RecordingObserver } from "../support/controller.js";
import { TEST_METRICS } from "../support/exporter.js";
import { eventually, MERGE_PATCH } from "../support/kube.js";
import {
  appEvents,
  appSpec,
  deployApp,
  image,
  INTERVAL_MS,
  secondaryExists,
  startRolloutEnv,
  untilSettled,
  type RolloutEnv,
} from "../support/rollout-env.js";
import { seen } from "../support/rollout-recorder.js";
import { answerZero, forward } from "../support/prometheus-stand-in.js";

/** The older name of the label that marks a Secret as made for the controller (still accepted). */
const CREDENTIALS_LABEL = "canaryapp.io/prometheus-credentials";
/** Its current name. */
const NEUTRAL_LABEL = "canaryapp.io/credentials";
/** The annotation by which a Secret's owner names where its contents may go. */
const ALLOWED_URLS = "canaryapp.io/allowed-urls";

interface Listener {
  url: string;
  /** TCP connections accepted. */
  connections: number;
  /** Requests received, with the Authorization header they carried. */
  requests: { url: string; authorization: string | undefined }[];
  close(): Promise<void>;
}

/**
 * An HTTP server on 127.0.0.1 counting connections. With `upstream` it forwards requests there (a
 * Prometheus that sees who asks); without, it answers like a Prometheus whose every query returns 0, as an
 * attacker's server would to keep the rollout going.
 */
async function startListener(upstream?: string): Promise<Listener> {
  const state = { connections: 0, requests: [] as Listener["requests"] };
  const target = upstream === undefined ? undefined : new URL(upstream);
  const server: Server = createServer((req, res) => {
    state.requests.push({ url: req.url ?? "", authorization: req.headers.authorization });
    if (target === undefined) answerZero(res);
    else forward(req, res, target);
  });
  server.on("connection", () => state.connections++);
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return Object.assign(state, {
    url: `http://127.0.0.1:${port}`,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  });
}

/** Every line the controller logs, at debug level, kept in memory. */
class LogCapture extends Writable {
  text = "";
  override _write(chunk: Buffer, _encoding: string, done: () => void): void {
    this.text += chunk.toString("utf8");
    done();
  }
}

const b64 = (s: string) => Buffer.from(s, "utf8").toString("base64");

describe("the controller is no confused deputy", () => {
  let env: RolloutEnv;
  let attacker: Listener;
  let outside: Listener;
  let prometheus: Listener;
  let controller: RunningController;
  const logs = new LogCapture();
  // A token as a ServiceAccount-token Secret holds one: something worth stealing.
  const saToken = `eyJhbGciOiJSUzI1NiJ9.${randomBytes(24).toString("hex")}`;
  const promToken = `prom-${randomBytes(16).toString("hex")}`;

  before(async () => {
    env = await startRolloutEnv("deputy", { controller: false });
    attacker = await startListener();
    outside = await startListener();
    prometheus = await startListener(env.prometheus.url);
    // The policy allows the real Prometheus, the token-checking stand-in in front of it and even the
    // attacker's address (the worst case for the credentials rule), but not `outside`.
    const policy = [env.prometheus.url, prometheus.url, attacker.url].join(",");
    // The listeners speak plain http: the operator allows credentials over it (tenant-destinations.test.ts
    // shows the https rule).
    const config = loadConfig([`--namespaces=${env.namespace}`, "--leader-elect=false", "--http-address=127.0.0.1:0"], {
      KUBECONFIG: process.env["KUBECONFIG"],
      PROMETHEUS_URL_POLICY: policy,
      ALLOW_PLAIN_HTTP_CREDENTIALS: "true",
    });
    controller = startController({
      config,
      log: pino({ level: "debug" }, logs),
      observer: new RecordingObserver(),
    });
    await env.core.createNamespacedSecret({
      namespace: env.namespace,
      body: {
        // A ServiceAccount token Secret as Kubernetes makes them (its token set here: the api profile runs
        // no token controller).
        metadata: { name: "deployer-token", annotations: { "kubernetes.io/service-account.name": "deployer" } },
        type: "kubernetes.io/service-account-token",
        data: { token: b64(saToken), "ca.crt": b64("-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n") },
      },
    });
  });
  after(async () => {
    await controller.stop();
    await Promise.all([attacker.close(), outside.close(), prometheus.close()]);
    await env.stop();
  });

  /** Waits until the app's InvalidSpec condition has `reason`, or the listener got a connection. */
  async function refusedOrLeaked(name: string, reason: string, listener: Listener): Promise<CanaryApp> {
    return eventually(
      `${name}: InvalidSpec ${reason}, or a connection to ${listener.url}`,
      async () => {
        const app = await env.apps.get(name);
        const condition = app.status?.conditions?.find((c) => c.type === "InvalidSpec");
        return condition?.reason === reason || listener.connections > 0 ? app : undefined;
      },
      { timeoutMs: 30_000, intervalMs: 100 },
    );
  }

  test(
    "exfiltration: a ServiceAccount token Secret and the attacker's URL: nothing is sent, the condition says why",
    { timeout: 90_000 },
    async () => {
      const name = "steal";
      const recorder = await deployApp(env, name, appSpec(env, name));
      const since = Date.now();
      await env.apps.patchSpec(name, {
        image: image(name, "v2"),
        prometheusURL: attacker.url,
        prometheus: { secretRef: { name: "deployer-token" } },
      });
      const app = await refusedOrLeaked(name, "CredentialsRefused", attacker);
      // Long enough for several analyses, had a test started.
      await sleep(3 * INTERVAL_MS);

      const received = attacker.requests.map((r) => `${r.url} Authorization: ${r.authorization ?? "(none)"}`);
      assert.equal(attacker.connections, 0, `the attacker's listener received:\n${received.join("\n")}`);
      const condition = app.status?.conditions?.find((c) => c.type === "InvalidSpec");
      assert.equal(condition?.status, "True");
      assert.match(
        condition?.message ?? "",
        /^spec\.prometheus\.secretRef deployer-token: no Secret of that name in namespace \S+ carries the label canaryapp\.io\/credentials=true \(nor its older name canaryapp\.io\/prometheus-credentials=true\)/,
      );
      assert.equal(app.status?.phase, "Invalid");
      // Not the image's fault: nothing recorded against it, no traffic moved, no secondary.
      assert.equal(app.status?.failedImages, undefined);
      assert.deepEqual(recorder.weightPairs(since), [[100, 0]]);
      assert.deepEqual(seen(recorder.secondary, since), []);
      assert.equal(await secondaryExists(env, name), false);
      const warning = (await appEvents(env, name)).find((e) => e.reason === "CredentialsRefused");
      assert.equal(warning?.type, "Warning");
      assert.equal(warning?.message, condition?.message);
    },
  );

  test(
    "SSRF: a URL outside the policy is refused before any connection, without a Secret involved",
    { timeout: 60_000 },
    async () => {
      const name = "probe";
      const recorder = await deployApp(env, name, appSpec(env, name));
      const since = Date.now();
      await env.apps.patchSpec(name, { image: image(name, "v2"), prometheusURL: `${outside.url}/internal/admin` });
      const app = await refusedOrLeaked(name, "PrometheusURLNotAllowed", outside);
      await sleep(3 * INTERVAL_MS);

      assert.equal(outside.connections, 0, "the out-of-policy listener was never connected to");
      const condition = app.status?.conditions?.find((c) => c.type === "InvalidSpec");
      assert.match(
        condition?.message ?? "",
        /^spec\.prometheusURL http:\/\/127\.0\.0\.1:\d+\/internal\/admin is outside/,
      );
      assert.equal(app.status?.failedImages, undefined);
      assert.deepEqual(recorder.weightPairs(since), [[100, 0]]);
      assert.ok(
        (await appEvents(env, name)).some((e) => e.type === "Warning" && e.reason === "PrometheusURLNotAllowed"),
      );
    },
  );

  test(
    "a Secret made for Prometheus works once labelled, and its token appears nowhere but in the request",
    { timeout: 90_000 },
    async () => {
      const name = "labelled";
      await env.core.createNamespacedSecret({
        namespace: env.namespace,
        // Its owner named the Prometheus it is for, and has not labelled it yet.
        body: {
          metadata: { name: "prom-creds", annotations: { [ALLOWED_URLS]: prometheus.url } },
          type: "Opaque",
          data: { token: b64(promToken) },
        },
      });
      const recorder = await deployApp(env, name, appSpec(env, name, { maxWeight: 20 }));
      env.exporter.set(TEST_METRICS.errors, name, 0);
      const patched = await env.apps.patchSpec(name, {
        image: image(name, "v2"),
        prometheusURL: prometheus.url,
        prometheus: { secretRef: { name: "prom-creds" } },
      });
      // Not labelled yet: refused.
      await refusedOrLeaked(name, "CredentialsRefused", prometheus);
      assert.equal(prometheus.connections, 0);

      // Labelling the Secret is enough: the controller sees it through its informer, no spec change needed.
      await env.core.patchNamespacedSecret(
        {
          namespace: env.namespace,
          name: "prom-creds",
          body: { metadata: { labels: { [CREDENTIALS_LABEL]: "true" } } },
        },
        MERGE_PATCH,
      );
      const status = await untilSettled(recorder, "Healthy", { generation: patched.metadata.generation ?? 0 }, 60_000);
      assert.equal(status.primaryImage, image(name, "v2"));
      const queries = prometheus.requests.filter((r) => r.url.startsWith("/api/v1/query"));
      assert.ok(queries.length >= 2, `${queries.length} queries reached Prometheus`);
      for (const q of queries) assert.equal(q.authorization, `Bearer ${promToken}`);
      assert.equal(attacker.connections, 0);

      // Nowhere else: not in the controller's log (debug level), the Events, or any CanaryApp's status.
      const events = await env.core.listNamespacedEvent({ namespace: env.namespace });
      const apps = await Promise.all(["steal", "probe", name].map((n) => env.apps.get(n)));
      const places = { log: logs.text, events: JSON.stringify(events.items), apps: JSON.stringify(apps) };
      assert.ok(logs.text.length > 1000, "the log was captured");
      for (const [where, text] of Object.entries(places)) {
        for (const secret of [promToken, b64(promToken), saToken, b64(saToken)]) {
          assert.equal(text.includes(secret), false, `a token appears in the ${where}`);
        }
      }
    },
  );

  test("a Secret labelled canaryapp.io/credentials is used for Prometheus", { timeout: 60_000 }, async () => {
    const name = "neutral";
    const token = `neutral-${randomBytes(8).toString("hex")}`;
    await env.core.createNamespacedSecret({
      namespace: env.namespace,
      body: {
        metadata: {
          name: "neutral-creds",
          labels: { [NEUTRAL_LABEL]: "true" },
          annotations: { [ALLOWED_URLS]: prometheus.url },
        },
        type: "Opaque",
        data: { token: b64(token) },
      },
    });
    const recorder = await deployApp(env, name, appSpec(env, name, { maxWeight: 20 }));
    env.exporter.set(TEST_METRICS.errors, name, 0);
    const patched = await env.apps.patchSpec(name, {
      image: image(name, "v2"),
      prometheusURL: prometheus.url,
      prometheus: { secretRef: { name: "neutral-creds" } },
    });
    const status = await untilSettled(recorder, "Healthy", { generation: patched.metadata.generation ?? 0 }, 45_000);
    assert.equal(status.primaryImage, image(name, "v2"));
    const sent = prometheus.requests.filter((r) => r.authorization === `Bearer ${token}`);
    assert.ok(sent.length >= 1, "queries carried the token of the Secret with the new label");
  });
});

/**
 * Where a tenant may make the controller send things, on the real API server with a real Prometheus and
 * the controller in this process. A tenant who may edit CanaryApps (and create Services in its namespace)
 * but not write Secrets tries to send a credentials Secret somewhere its owner did not name, to reach any
 * host through a Service name, and to POST where webhooks have no business. Listeners on 127.0.0.1 record
 * every connection and request; a refusal must leave them untouched and say why on the CanaryApp. The
 * allowed counterpart of each shows the request does arrive.
 *
 * The api profile runs no cluster DNS and no kube-proxy, so `dnsStandIn` plays both for the Service names
 * the test registers: each resolves to 127.0.0.1, where the listener behind the Service's port is. It
 * follows what a cluster does for each kind of Service (https://kubernetes.io/docs/concepts/services-networking/dns-pod-service/):
 * a ClusterIP Service's name resolves to an address that reaches its selected pods; an ExternalName
 * Service's name is a CNAME to its `externalName`, wherever that is (here: the attacker's listener); a
 * Service without a selector reaches whatever its hand-written Endpoints name (here: the attacker's
 * listener too). A name no Service registered does not resolve.
 */
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { randomBytes } from "node:crypto";
import dns from "node:dns";
import { mkdtemp, readFile, rm } from "node:fs/promises";
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import { createServer as createTlsServer } from "node:https";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { setTimeout as sleep } from "node:timers/promises";
import { promisify } from "node:util";
import type { CoreV1Api, V1Service } from "@kubernetes/client-node";
import type { CanaryApp, WebhookSpec } from "../../src/api/types.js";
import { runController, type TestController } from "../support/controller.js";
import { answerZero, forward } from "../support/prometheus-stand-in.js";
import { createTestNamespace, eventually, MERGE_PATCH, testKubeConfig } from "../support/kube.js";
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

const CREDENTIALS_LABEL = "canaryapp.io/credentials";
const ALLOWED_URLS = "canaryapp.io/allowed-urls";
const b64 = (s: string) => Buffer.from(s, "utf8").toString("base64");

/** One request a listener received. */
interface Seen {
  method: string;
  host: string;
  path: string;
  authorization: string | undefined;
  bytes: number;
}

interface Listener {
  url: string;
  port: number;
  /** TCP connections accepted. */
  connections: number;
  requests: Seen[];
  close(): Promise<void>;
}

/**
 * A listener on 127.0.0.1 (TLS with `tls`) recording every connection and request. With `upstream` it
 * forwards each request there (a Prometheus that sees who asks); without, it answers a Prometheus query
 * with the scalar 0 (as an attacker's server would, to keep the rollout going) and anything else with 200.
 */
async function listen(options: { upstream?: string; tls?: { key: string; cert: string } } = {}): Promise<Listener> {
  const state = { connections: 0, requests: [] as Seen[] };
  const target = options.upstream === undefined ? undefined : new URL(options.upstream);
  const handle = (req: IncomingMessage, res: ServerResponse): void => {
    let bytes = 0;
    const chunks: Buffer[] = [];
    req.on("data", (chunk: Buffer) => {
      bytes += chunk.length;
      if (target !== undefined) chunks.push(chunk);
    });
    req.on("end", () => {
      state.requests.push({
        method: req.method ?? "",
        host: req.headers.host ?? "",
        path: req.url ?? "",
        authorization: req.headers.authorization,
        bytes,
      });
      if (target !== undefined) forward(req, res, target, Buffer.concat(chunks));
      else if ((req.url ?? "").startsWith("/api/v1/query")) answerZero(res);
      else res.writeHead(200).end();
    });
  };
  const server = options.tls === undefined ? createServer(handle) : createTlsServer(options.tls, handle);
  server.on("connection", () => state.connections++);
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return Object.assign(state, {
    url: `${options.tls === undefined ? "http" : "https"}://127.0.0.1:${port}`,
    port,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  });
}

/** Cluster DNS and kube-proxy for the Service names registered (see the file's comment). */
class DnsStandIn {
  readonly names = new Set<string>();
  readonly asked: string[] = [];
  readonly #original = dns.lookup;

  install(): void {
    const names = this.names;
    const asked = this.asked;
    const original = this.#original;
    // Node's net.connect resolves through the `lookup` of the node:dns module object at connect time.
    const standIn = function (this: unknown, host: string, options: unknown, callback?: unknown): void {
      const done = (typeof options === "function" ? options : callback) as (
        err: NodeJS.ErrnoException | null,
        address?: string | dns.LookupAddress[],
        family?: number,
      ) => void;
      const opts = (typeof options === "object" && options !== null ? options : {}) as { all?: boolean };
      const name = host.toLowerCase().replace(/\.$/, "");
      if (!/\.svc(\.cluster\.local)?$/.test(name) && !names.has(name)) {
        (original as (...args: unknown[]) => void).call(this, host, options, callback);
        return;
      }
      asked.push(name);
      if (!names.has(name)) {
        const error: NodeJS.ErrnoException = new Error(`getaddrinfo ENOTFOUND ${host}`);
        error.code = "ENOTFOUND";
        process.nextTick(() => done(error));
        return;
      }
      process.nextTick(() =>
        opts.all ? done(null, [{ address: "127.0.0.1", family: 4 }]) : done(null, "127.0.0.1", 4),
      );
    };
    (dns as { lookup: unknown }).lookup = standIn;
  }

  uninstall(): void {
    (dns as { lookup: unknown }).lookup = this.#original;
  }
}

/** A self-signed certificate for 127.0.0.1, made with openssl. */
async function selfSigned(): Promise<{ key: string; cert: string }> {
  const dir = await mkdtemp(join(tmpdir(), "canaryapp-tls-"));
  try {
    await promisify(execFile)("openssl", [
      ...["req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"],
      ...["-keyout", join(dir, "key.pem"), "-out", join(dir, "cert.pem"), "-days", "1"],
      ...["-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1"],
    ]);
    return { key: await readFile(join(dir, "key.pem"), "utf8"), cert: await readFile(join(dir, "cert.pem"), "utf8") };
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

describe("a tenant's destinations", () => {
  let env: RolloutEnv;
  let controller: TestController;
  let core: CoreV1Api;
  let otherNamespace: string;
  let tls: { key: string; cert: string };
  /** The controller's own Prometheus (its --prometheus-url), in front of the real one. */
  let own: Listener;
  const listeners: Listener[] = [];
  const dnsStandIn = new DnsStandIn();

  before(async () => {
    env = await startRolloutEnv("dest", { controller: false });
    core = env.core;
    otherNamespace = await createTestNamespace(testKubeConfig(), "dest-other");
    tls = await selfSigned();
    own = await started(listen({ upstream: env.prometheus.url }));
    dnsStandIn.install();
    controller = runController(env.namespace, [`--prometheus-url=${own.url}`]);
  });
  after(async () => {
    await controller.stop();
    dnsStandIn.uninstall();
    await Promise.all(listeners.map((l) => l.close()));
    await env.stop();
  });

  async function started(listener: Promise<Listener>): Promise<Listener> {
    const l = await listener;
    listeners.push(l);
    return l;
  }

  /** A Service named `name` whose port is the listener's; `kind` says what stands behind its name. */
  async function service(
    name: string,
    listener: Listener,
    kind: "selector" | "externalName" | "noSelector",
    namespace = env.namespace,
  ): Promise<string> {
    const port = { name: "http", port: listener.port, targetPort: listener.port };
    const spec: V1Service["spec"] =
      kind === "selector"
        ? { type: "ClusterIP", selector: { app: name }, ports: [port] }
        : kind === "noSelector"
          ? { type: "ClusterIP", ports: [port] }
          : { type: "ExternalName", externalName: "catcher.attacker.example", ports: [port] };
    await core.createNamespacedService({ namespace, body: { metadata: { name }, spec } });
    const host = `${name}.${namespace}.svc`;
    dnsStandIn.names.add(host);
    dnsStandIn.names.add(`${host}.cluster.local`);
    return `http://${host}:${listener.port}`;
  }

  /** A Secret labelled as credentials, with `annotations`, holding a bearer token (and a CA). */
  async function credentials(name: string, token: string, annotations: Record<string, string> = {}): Promise<void> {
    await core.createNamespacedSecret({
      namespace: env.namespace,
      body: {
        metadata: { name, labels: { [CREDENTIALS_LABEL]: "true" }, annotations },
        type: "Opaque",
        data: { token: b64(token), "ca.crt": b64(tls.cert) },
      },
    });
  }

  /** Waits until the app's InvalidSpec condition has `reason`, or `reached()` says the request got through. */
  async function refusedOrReached(name: string, reason: string, reached: () => boolean): Promise<CanaryApp> {
    return eventually(
      `${name}: InvalidSpec ${reason}, or a request that should have been refused`,
      async () => {
        const app = await env.apps.get(name);
        const condition = app.status?.conditions?.find((c) => c.type === "InvalidSpec");
        return condition?.reason === reason || reached() ? app : undefined;
      },
      { timeoutMs: 30_000, intervalMs: 100 },
    );
  }

  /** Asserts the refusal as a user sees it: the condition, the phase, an Event, no test, nothing held. */
  async function assertRefused(app: CanaryApp, reason: string, message: RegExp): Promise<void> {
    const name = app.metadata.name ?? "";
    const condition = app.status?.conditions?.find((c) => c.type === "InvalidSpec");
    assert.equal(condition?.status, "True", `${name}: InvalidSpec is True`);
    assert.equal(condition?.reason, reason);
    assert.match(condition?.message ?? "", message);
    assert.equal(app.status?.phase, "Invalid");
    assert.equal(app.status?.failedImages, undefined, "nothing held against the image");
    assert.equal(await secondaryExists(env, name), false, "no test started");
    const warning = (await appEvents(env, name)).find((e) => e.reason === reason);
    assert.equal(warning?.type, "Warning");
    assert.equal(warning?.message, condition?.message);
  }

  describe("Prometheus credentials go only where their Secret names", () => {
    test(
      "a labelled Secret without canaryapp.io/allowed-urls is refused, saying how to annotate it",
      { timeout: 90_000 },
      async () => {
        const name = "unnamed";
        const prometheus = await started(listen({ upstream: env.prometheus.url, tls }));
        const token = `t-${randomBytes(8).toString("hex")}`;
        await credentials("unnamed-creds", token);
        const recorder = await deployApp(env, name, appSpec(env, name, { maxWeight: 20 }));
        const patched = await env.apps.patchSpec(name, {
          image: image(name, "v2"),
          prometheusURL: prometheus.url,
          prometheus: { secretRef: { name: "unnamed-creds" } },
        });
        const app = await refusedOrReached(name, "CredentialsRefused", () => prometheus.connections > 0);
        await sleep(3 * INTERVAL_MS);
        // A copy: the assertion would narrow the live list's type to an empty one for the rest of the test.
        assert.deepEqual([...prometheus.requests], [], "nothing reached the Prometheus");
        assert.equal(prometheus.connections, 0);
        await assertRefused(
          app,
          "CredentialsRefused",
          new RegExp(
            `^spec\\.prometheus\\.secretRef unnamed-creds: the Secret has no annotation ${ALLOWED_URLS}.*` +
              `kubectl annotate secret unnamed-creds -n ${env.namespace} ${ALLOWED_URLS}=`,
          ),
        );

        // Its owner names the https Prometheus it is for: the same spec now runs, with the token sent there
        // (the Secret's CA verifies the listener's certificate).
        await core.patchNamespacedSecret(
          {
            namespace: env.namespace,
            name: "unnamed-creds",
            body: { metadata: { annotations: { [ALLOWED_URLS]: prometheus.url } } },
          },
          MERGE_PATCH,
        );
        const status = await untilSettled(recorder, "Healthy", { generation: patched.metadata.generation ?? 0 });
        assert.equal(status.primaryImage, image(name, "v2"));
        const queries = prometheus.requests.filter((r) => r.path.startsWith("/api/v1/query"));
        assert.ok(queries.length >= 2, `${queries.length} queries reached the https Prometheus`);
        for (const q of queries) assert.equal(q.authorization, `Bearer ${token}`);
      },
    );

    test(
      "a Secret made for another Prometheus is not sent to the tenant's own Service",
      { timeout: 90_000 },
      async () => {
        const name = "borrowed";
        const real = await started(listen({ upstream: env.prometheus.url, tls }));
        const catcher = await started(listen());
        const catcherURL = await service("catcher", catcher, "selector");
        const token = `t-${randomBytes(8).toString("hex")}`;
        await credentials("team-creds", token, { [ALLOWED_URLS]: real.url });
        await deployApp(env, name, appSpec(env, name));
        await env.apps.patchSpec(name, {
          image: image(name, "v2"),
          prometheusURL: catcherURL,
          prometheus: { secretRef: { name: "team-creds" } },
        });
        const app = await refusedOrReached(name, "CredentialsRefused", () => catcher.connections > 0);
        await sleep(3 * INTERVAL_MS);
        assert.deepEqual(catcher.requests, [], "the catcher received nothing");
        assert.equal(catcher.connections, 0);
        assert.equal(real.connections, 0);
        await assertRefused(
          app,
          "CredentialsRefused",
          new RegExp(
            `^spec\\.prometheus\\.secretRef team-creds: spec\\.prometheusURL http://catcher\\.${env.namespace}\\.svc:\\d+ ` +
              `is not where the Secret may be sent \\(${ALLOWED_URLS}: https://127\\.0\\.0\\.1:\\d+\\)`,
          ),
        );
      },
    );

    test("credentials are not sent over plain http without the operator's flag", { timeout: 90_000 }, async () => {
      const name = "plain";
      const prometheus = await started(listen({ upstream: env.prometheus.url }));
      await credentials("plain-creds", `t-${randomBytes(8).toString("hex")}`, { [ALLOWED_URLS]: prometheus.url });
      await deployApp(env, name, appSpec(env, name));
      await env.apps.patchSpec(name, {
        image: image(name, "v2"),
        prometheusURL: prometheus.url,
        prometheus: { secretRef: { name: "plain-creds" } },
      });
      const app = await refusedOrReached(name, "CredentialsRefused", () => prometheus.connections > 0);
      await sleep(3 * INTERVAL_MS);
      assert.deepEqual(prometheus.requests, [], "nothing reached the Prometheus");
      await assertRefused(
        app,
        "CredentialsRefused",
        /^spec\.prometheus\.secretRef plain-creds: credentials are not sent over plain http \(spec\.prometheusURL http:\/\/127\.0\.0\.1:\d+\).*--allow-plain-http-credentials/,
      );
    });
  });

  describe("a *.svc name is allowed only when it names a Service with a selector", () => {
    test("a ClusterIP Service with a selector is used as the Prometheus", { timeout: 90_000 }, async () => {
      const name = "selected";
      const prometheus = await started(listen({ upstream: env.prometheus.url }));
      const url = await service("selected-prom", prometheus, "selector");
      const recorder = await deployApp(env, name, appSpec(env, name, { maxWeight: 20 }));
      const patched = await env.apps.patchSpec(name, { image: image(name, "v2"), prometheusURL: url });
      const status = await untilSettled(recorder, "Healthy", { generation: patched.metadata.generation ?? 0 });
      assert.equal(status.primaryImage, image(name, "v2"));
      const queries = prometheus.requests.filter((r) => r.path.startsWith("/api/v1/query"));
      assert.ok(queries.length >= 2, `${queries.length} queries reached the Service`);
      for (const q of queries) assert.equal(q.host, `selected-prom.${env.namespace}.svc:${prometheus.port}`);
      assert.ok(dnsStandIn.asked.includes(`selected-prom.${env.namespace}.svc`), "its name was resolved");
    });

    for (const [kind, label, why] of [
      ["externalName", "an ExternalName Service", /is an ExternalName Service/],
      ["noSelector", "a Service without a selector", /has no selector/],
    ] as const) {
      test(`${label} is refused as a Prometheus`, { timeout: 90_000 }, async () => {
        const name = kind === "externalName" ? "external" : "manual";
        const catcher = await started(listen());
        const url = await service(`${name}-prom`, catcher, kind);
        await deployApp(env, name, appSpec(env, name));
        await env.apps.patchSpec(name, { image: image(name, "v2"), prometheusURL: url });
        const app = await refusedOrReached(name, "PrometheusURLNotAllowed", () => catcher.connections > 0);
        await sleep(3 * INTERVAL_MS);
        assert.deepEqual(catcher.requests, [], "the catcher received nothing");
        assert.equal(catcher.connections, 0);
        assert.equal(dnsStandIn.asked.includes(new URL(url).hostname), false, "its name was not even resolved");
        await assertRefused(app, "PrometheusURLNotAllowed", why);
        assert.match(
          app.status?.conditions?.find((c) => c.type === "InvalidSpec")?.message ?? "",
          new RegExp(
            `^spec\\.prometheusURL http://${name}-prom\\.${env.namespace}\\.svc:\\d+: Service ${env.namespace}/${name}-prom`,
          ),
        );
      });
    }
  });

  describe("webhooks have their own policy", () => {
    /** Deploys `name` and changes its image with `webhooks`; resolves the app once refused (or reached). */
    async function withWebhooks(name: string, webhooks: WebhookSpec[], reached: () => boolean): Promise<CanaryApp> {
      await deployApp(env, name, appSpec(env, name));
      await env.apps.patchSpec(name, { image: image(name, "v2"), analysis: { webhooks } });
      return refusedOrReached(name, "WebhookURLNotAllowed", reached);
    }

    test(
      "a Service of the app's own namespace gets its webhooks, metadata as written",
      { timeout: 90_000 },
      async () => {
        const name = "hooked";
        const receiver = await started(listen());
        const url = await service("own-hooks", receiver, "selector");
        const metadata = {
          ticket: "CHG-7",
          notes: "n".repeat(1000),
          ...Object.fromEntries([[`k-${"k".repeat(30_000)}`, "v"]]),
        };
        const recorder = await deployApp(env, name, appSpec(env, name, { maxWeight: 20 }));
        const patched = await env.apps.patchSpec(name, {
          image: image(name, "v2"),
          analysis: {
            webhooks: [
              { name: "approve", type: "confirm-rollout", url: `${url}/approve`, metadata },
              {
                name: "smoke",
                type: "rollout",
                url: `http://own-hooks.${env.namespace}.svc.cluster.local:${receiver.port}/smoke`,
              },
            ],
          },
        });
        const status = await untilSettled(recorder, "Healthy", { generation: patched.metadata.generation ?? 0 });
        assert.equal(status.primaryImage, image(name, "v2"));
        const approve = receiver.requests.filter((r) => r.path === "/approve");
        assert.equal(approve.length, 1, "confirm-rollout asked once and answered 200");
        assert.equal(approve[0]?.method, "POST");
        assert.ok((approve[0]?.bytes ?? 0) > 31_000, `its metadata went as written (${approve[0]?.bytes} bytes)`);
        assert.ok(receiver.requests.filter((r) => r.path === "/smoke").length >= 1, "the rollout webhook was called");
      },
    );

    test("the controller's own Prometheus takes no webhook", { timeout: 90_000 }, async () => {
      const name = "own-prom";
      const hook = `${own.url}/api/v1/admin/tsdb/delete_series?match[]=up`;
      const app = await withWebhooks(name, [{ name: "wipe", type: "confirm-rollout", url: hook }], () =>
        own.requests.some((r) => r.method === "POST"),
      );
      await sleep(3 * INTERVAL_MS);
      assert.deepEqual(
        own.requests.filter((r) => r.method === "POST"),
        [],
        "no POST reached the controller's Prometheus",
      );
      await assertRefused(app, "WebhookURLNotAllowed", /webhook wipe .*the controller's own Prometheus/);
    });

    test("a Service of another namespace is outside the default webhook policy", { timeout: 90_000 }, async () => {
      const name = "neighbour";
      const receiver = await started(listen());
      const url = await service("hooks", receiver, "selector", otherNamespace);
      const app = await withWebhooks(
        name,
        [{ name: "gate", type: "confirm-rollout", url: `${url}/gate` }],
        () => receiver.connections > 0,
      );
      await sleep(3 * INTERVAL_MS);
      assert.deepEqual(receiver.requests, [], "the other namespace's Service received nothing");
      await assertRefused(
        app,
        "WebhookURLNotAllowed",
        new RegExp(
          `webhook gate .*outside the controller's webhook URL policy \\(\\*\\.${env.namespace}\\.svc, .*--webhook-url-policy`,
        ),
      );
    });

    test(
      "a short name <service>.<namespace> is refused: the resolver's search path decides where it goes",
      {
        timeout: 90_000,
      },
      async () => {
        const name = "short";
        const receiver = await started(listen());
        await service("short-hooks", receiver, "selector");
        dnsStandIn.names.add(`short-hooks.${env.namespace}`);
        const url = `http://short-hooks.${env.namespace}:${receiver.port}/gate`;
        const app = await withWebhooks(
          name,
          [{ name: "gate", type: "confirm-rollout", url }],
          () => receiver.connections > 0,
        );
        await sleep(3 * INTERVAL_MS);
        assert.deepEqual(receiver.requests, []);
        await assertRefused(app, "WebhookURLNotAllowed", /webhook gate .*outside the controller's webhook URL policy/);
      },
    );

    test("an ExternalName Service of the app's own namespace takes no webhook", { timeout: 90_000 }, async () => {
      const name = "ext-hook";
      const catcher = await started(listen());
      const url = await service("ext-hooks", catcher, "externalName");
      const app = await withWebhooks(
        name,
        [{ name: "gate", type: "confirm-rollout", url: `${url}/gate` }],
        () => catcher.connections > 0,
      );
      await sleep(3 * INTERVAL_MS);
      assert.deepEqual(catcher.requests, []);
      assert.equal(dnsStandIn.asked.includes(new URL(url).hostname), false, "its name was not even resolved");
      await assertRefused(app, "WebhookURLNotAllowed", /webhook gate .*is an ExternalName Service/);
    });

    test(
      "a webhook whose body would exceed 64 KiB is refused before anything is sent",
      { timeout: 90_000 },
      async () => {
        const name = "bulky";
        const receiver = await started(listen());
        const url = await service("bulky-hooks", receiver, "selector");
        // Each value stays within the schema's 1024 characters; the keys carry the bulk.
        const metadata = Object.fromEntries(
          Array.from({ length: 8 }, (_, i) => [`${String(i)}-${"k".repeat(9000)}`, "v".repeat(1000)]),
        );
        await deployApp(env, name, appSpec(env, name));
        await env.apps.patchSpec(name, {
          image: image(name, "v2"),
          analysis: { webhooks: [{ name: "gate", type: "confirm-rollout", url, metadata }] },
        });
        const app = await refusedOrReached(name, "WebhookBodyTooLarge", () => receiver.connections > 0);
        await sleep(3 * INTERVAL_MS);
        assert.deepEqual(
          receiver.requests.map((r) => `${r.method} ${r.path} ${r.bytes} bytes`),
          [],
          "the receiver got nothing",
        );
        await assertRefused(
          app,
          "WebhookBodyTooLarge",
          /webhook gate: its request body would be \d+ bytes, over the 65536/,
        );
      },
    );
  });

  describe("notifications", () => {
    test(
      "a notification Secret without canaryapp.io/allowed-urls is not used, and an Event says so",
      {
        timeout: 90_000,
      },
      async () => {
        const name = "unnamed-notify";
        const receiver = await started(listen());
        const url = await service("notify", receiver, "selector");
        await core.createNamespacedSecret({
          namespace: env.namespace,
          body: { metadata: { name: "notify-url", labels: { [CREDENTIALS_LABEL]: "true" } }, stringData: { url } },
        });
        const recorder = await deployApp(env, name, {
          ...appSpec(env, name, { maxWeight: 20 }),
          notifications: [{ type: "generic", secretRef: { name: "notify-url" } }],
        });
        const patched = await env.apps.patchSpec(name, { image: image(name, "v2") });
        await untilSettled(recorder, "Healthy", { generation: patched.metadata.generation ?? 0 });
        const warning = await eventually("a Warning Event about the notification", async () =>
          (await appEvents(env, name)).find((e) => e.reason === "NotificationRefused"),
        );
        assert.equal(warning.type, "Warning");
        assert.match(
          warning.message,
          /notification generic \(Secret notify-url\): the Secret has no annotation canaryapp\.io\/allowed-urls/,
        );
        assert.deepEqual(receiver.requests, [], "the receiver got no notice");
      },
    );
  });
});

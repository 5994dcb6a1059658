import assert from "node:assert/strict";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { after, before, describe, test } from "node:test";
import { pino } from "pino";
import type { CanaryApp, Notice } from "../api/types.js";
import { ALLOWED_URLS_ANNOTATION, type SecretData } from "../analysis/providers/credentials.js";
import { PostLimiter } from "../webhooks/rate-limit.js";
import { noticeSender, type SenderOptions } from "./sender.js";

const b64 = (s: string) => Buffer.from(s, "utf8").toString("base64");

const notice: Notice = {
  seq: 1,
  event: "Promoted",
  image: "web:v2",
  time: "2025-01-01T00:00:00Z",
  message: "promoted",
  idempotencyKey: "shop/web/1",
};

function app(spec: Partial<CanaryApp["spec"]> = {}): CanaryApp {
  return {
    metadata: { name: "web", namespace: "shop" },
    spec: { image: "web:v2", imageListenPort: 8080, ...spec },
    status: { phase: "Healthy", primaryImage: "web:v2" },
  };
}

describe("noticeSender: where notices may go", () => {
  const paths: string[] = [];
  let server: Server;
  let base = "";
  before(async () => {
    server = createServer((req, res) => {
      req.resume();
      req.on("end", () => {
        paths.push(req.url ?? "");
        res.writeHead(200).end();
      });
    });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  after(() => server.close());

  /** A sender over these Secrets, a policy allowing what `allows` says, and a record of what was skipped. */
  function sender(
    secrets: Record<string, SecretData>,
    options: Partial<SenderOptions> & { allows?: (url: string) => boolean } = {},
  ) {
    const skipped: string[] = [];
    const allows = options.allows ?? (() => true);
    const send = noticeSender({
      readSecret: (_ns, name) => Promise.resolve(secrets[name] ?? null),
      destinations: {
        check: (_app, url, subject) => Promise.resolve(allows(url) ? undefined : `${subject} is outside (test)`),
      },
      allowPlainHttpCredentials: false,
      controllerURL: undefined,
      retries: 0,
      log: pino({ level: "silent" }),
      skipped: (_app, message) => skipped.push(message),
      ...options,
    });
    return { send, skipped };
  }

  const secret = (url: string, allowedUrls?: string): SecretData => ({
    data: { url: b64(url) },
    ...(allowedUrls !== undefined && { metadata: { annotations: { [ALLOWED_URLS_ANNOTATION]: allowedUrls } } }),
  });

  test("a notification URL goes only where its Secret says, over https unless plain http is allowed", async () => {
    const notifications = [{ type: "generic" as const, secretRef: { name: "hook" } }];
    const cases: [string, SecretData, boolean, RegExp | undefined][] = [
      ["no annotation", secret(`${base}/a`), true, /the Secret has no annotation canaryapp\.io\/allowed-urls/],
      ["another destination", secret(`${base}/b`, "https://hooks.example.com"), true, /is not where the Secret may/],
      ["plain http without the flag", secret(`${base}/c`, base), false, /not sent over plain http/],
      ["plain http with the flag", secret(`${base}/d`, base), true, undefined],
    ];
    for (const [what, data, plain, refused] of cases) {
      paths.length = 0;
      const { send, skipped } = sender({ hook: data }, { allowPlainHttpCredentials: plain });
      await send(app({ notifications }), notice);
      if (refused === undefined) {
        assert.equal(paths.length, 1, what);
        assert.deepEqual(skipped, [], what);
      } else {
        assert.deepEqual(paths, [], what);
        assert.equal(skipped.length, 1, what);
        assert.match(skipped[0] ?? "", /^notification generic \(Secret hook\): /, what);
        assert.match(skipped[0] ?? "", refused, what);
        assert.doesNotMatch(skipped[0] ?? "", /127\.0\.0\.1:\d+\/[a-d]/, `${what}: the URL is not repeated`);
      }
    }
  });

  test("a notification URL outside the webhook policy is skipped; the operator's own URL always goes", async () => {
    paths.length = 0;
    const { send, skipped } = sender(
      { hook: secret(`${base}/tenant`, base) },
      { allows: () => false, allowPlainHttpCredentials: true, controllerURL: `${base}/operator` },
    );
    await send(app({ notifications: [{ type: "slack", secretRef: { name: "hook" } }] }), notice);
    assert.deepEqual(paths, ["/operator"]);
    assert.deepEqual(skipped, ["notification slack (Secret hook): the URL it holds is outside (test)"]);
  });

  test("a missing Secret or key is skipped and said", async () => {
    const { send, skipped } = sender({});
    await send(app({ notifications: [{ type: "generic", secretRef: { name: "nope", key: "hook" } }] }), notice);
    assert.deepEqual(skipped, [
      "notification generic (Secret nope): no Secret of that name labelled as a canaryapp credential, or it has no key hook",
    ]);
  });

  test("post-rollout webhooks: rendered, judged by the webhook policy, and a body over the bound is skipped", async () => {
    paths.length = 0;
    const webhooks = [
      { name: "in", type: "post-rollout" as const, url: `${base}/post/{{name}}` },
      { name: "out", type: "post-rollout" as const, url: "http://elsewhere.example/post" },
      { name: "bulky", type: "post-rollout" as const, url: `${base}/bulky`, metadata: { b: "x".repeat(70_000) } },
    ];
    const { send, skipped } = sender({}, { allows: (url) => url.startsWith(base) });
    await send(app({ analysis: { webhooks } }), notice);
    assert.deepEqual(paths, ["/post/web"]);
    assert.deepEqual(
      skipped.map((s) => s.replace(/\d+ bytes/, "N bytes")),
      [
        "webhook out (http://elsewhere.example/post) is outside (test)",
        `webhook bulky (${base}/bulky): the request body would be N bytes, over the 65536-byte limit; nothing was sent`,
      ],
    );
  });

  test("an app over its rate limit fails the delivery (it is tried again later), unsent", async () => {
    paths.length = 0;
    const limiter = new PostLimiter({ now: () => 0, perMinute: 1 });
    const { send } = sender({}, { controllerURL: `${base}/operator`, limiter });
    await send(app(), notice);
    await assert.rejects(send(app(), notice), /rate limit/);
    assert.deepEqual(paths, ["/operator"]);
  });
});

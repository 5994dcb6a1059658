import assert from "node:assert/strict";
import { createServer, type IncomingMessage, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { after, before, describe, test } from "node:test";
import type { CanaryApp } from "../../api/types.js";
import { scoreAnalysis } from "../verdicts.js";
import type { AnalysisCheck } from "../checks.js";
import type { AnalysisProvider } from "./analysis-provider.js";
import { analysisByMode } from "./by-mode.js";
import { webhookDestinations } from "./webhook-destinations.js";
import { MAX_REQUEST_BODY_BYTES } from "../../webhooks/post.js";
import { PostLimiter } from "../../webhooks/rate-limit.js";
import { webhookAnalysis, webhookRefusal } from "./webhook.js";

/** Destinations that allow what `allows` says, without any Service involved. */
function destinations(allows: (url: string) => boolean) {
  const check = (_app: CanaryApp, url: string, subject: string) =>
    allows(url) ? undefined : `${subject} is outside the controller's webhook URL policy (test)`;
  return {
    vet: check,
    check: (app: CanaryApp, url: string, subject: string) => Promise.resolve(check(app, url, subject)),
  };
}

/** A receiver answering each path with the statuses listed for it, in turn (the last one repeats). */
function receiver(answers: Record<string, number[]>): {
  server: Server;
  bodies: unknown[];
  calls: Map<string, number>;
} {
  const bodies: unknown[] = [];
  const calls = new Map<string, number>();
  const server = createServer((req: IncomingMessage, res) => {
    let text = "";
    req.on("data", (chunk: Buffer) => (text += chunk.toString()));
    req.on("end", () => {
      bodies.push(JSON.parse(text));
      const path = req.url ?? "/";
      const n = calls.get(path) ?? 0;
      calls.set(path, n + 1);
      const list = answers[path] ?? [404];
      const status = list[Math.min(n, list.length - 1)] ?? 404;
      if (status === 302) res.setHeader("location", "http://169.254.169.254/");
      res.writeHead(status).end();
    });
  });
  return { server, bodies, calls };
}

const app: CanaryApp = {
  metadata: { name: "web", namespace: "shop" },
  spec: { image: "app:v2", imageListenPort: 8080 },
  status: {
    phase: "Progressing",
    primaryImage: "app:v1",
    weights: { primary: 90, secondary: 10 },
    canary: { image: "app:v2", stage: "Stepping", step: 0, startedAt: "", stepStartedAt: "", failedChecks: 0 },
  },
};

describe("webhookAnalysis", () => {
  const r = receiver({ "/ok": [200], "/flaky": [503, 503, 200], "/down": [503], "/moved": [302] });
  let base = "";
  before(async () => {
    await new Promise<void>((resolve) => r.server.listen(0, "127.0.0.1", resolve));
    base = `http://127.0.0.1:${(r.server.address() as AddressInfo).port}`;
  });
  after(() => r.server.close());

  const check = (name: string, retries = 0): AnalysisCheck => ({
    name,
    mode: "webhook",
    query: `${base}/${name}`,
    webhook: { type: "rollout", timeoutSeconds: 2, retries, metadata: { cmd: "hey -z 1m" } },
  });

  test("posts the payload and answers with the status, retried until 2xx or spent", async () => {
    const provider = webhookAnalysis({ destinations: destinations((url) => url.startsWith(base)) });
    const checks = [check("ok"), check("flaky", 2), check("down", 1), check("moved")];
    const outcomes = await provider.run(app, checks);
    assert.deepEqual(outcomes, [
      { kind: "value", value: 200 },
      { kind: "value", value: 200 },
      { kind: "value", value: 503 },
      { kind: "value", value: 302 },
    ]);
    assert.equal(r.calls.get("/flaky"), 3);
    assert.equal(r.calls.get("/down"), 2);
    assert.equal(r.calls.get("/moved"), 1, "a redirect is not followed");
    assert.deepEqual(r.bodies[0], {
      app: "web",
      namespace: "shop",
      type: "rollout",
      phase: "Progressing",
      stage: "Stepping",
      images: { primary: "app:v1", secondary: "app:v2" },
      weights: { primary: 90, secondary: 10 },
      metadata: { cmd: "hey -z 1m" },
    });
    const results = scoreAnalysis(checks, outcomes);
    assert.deepEqual(
      results.map((x) => [x.name, x.passed, x.reason, x.message]),
      [
        ["ok", true, "WebhookAnswered", "answered 200"],
        ["flaky", true, "WebhookAnswered", "answered 200"],
        ["down", false, "WebhookRejected", "answered 503"],
        ["moved", false, "WebhookRejected", "answered 302"],
      ],
    );
  });

  test("a URL outside the policy is never called", async () => {
    const before = r.calls.get("/ok");
    const [outcome] = await webhookAnalysis({ destinations: destinations(() => false) }).run(app, [check("ok")]);
    assert.equal(outcome?.kind, "error");
    assert.match(
      outcome?.kind === "error" ? outcome.message : "",
      /^webhook ok \(http:\/\/127\.0\.0\.1:\d+\/ok\) is outside the controller's webhook URL policy/,
    );
    assert.equal(r.calls.get("/ok"), before);
  });

  test("the controller's own Prometheus is never called, even where the policy takes anything", async () => {
    const before = r.calls.get("/ok");
    const provider = webhookAnalysis({
      destinations: webhookDestinations({ entries: ["*"], ownPrometheusURL: base }),
    });
    const [outcome] = await provider.run(app, [check("ok")]);
    assert.match(outcome?.kind === "error" ? outcome.message : "", /is the controller's own Prometheus/);
    assert.equal(r.calls.get("/ok"), before);
  });

  test("a body over the bound is never sent", async () => {
    const before = r.calls.get("/ok");
    const big: AnalysisCheck = {
      ...check("ok"),
      webhook: {
        type: "rollout",
        timeoutSeconds: 2,
        retries: 0,
        metadata: { blob: "x".repeat(MAX_REQUEST_BODY_BYTES) },
      },
    };
    const [outcome] = await webhookAnalysis({ destinations: destinations(() => true) }).run(app, [big]);
    assert.match(outcome?.kind === "error" ? outcome.message : "", /over the 65536-byte limit; nothing was sent/);
    assert.equal(r.calls.get("/ok"), before);
  });

  test("an app over its rate limit makes no more calls; another app is not held by it", async () => {
    const limiter = new PostLimiter({ now: () => 0, perMinute: 2 });
    const provider = webhookAnalysis({ destinations: destinations(() => true), limiter });
    const before = r.calls.get("/down") ?? 0;
    // Two tokens: the first call and one retry; the second retry is not made.
    const [outcome] = await provider.run(app, [check("down", 5)]);
    assert.match(outcome?.kind === "error" ? outcome.message : "", /over the controller's rate limit/);
    assert.equal((r.calls.get("/down") ?? 0) - before, 2);
    const other = { ...app, metadata: { name: "api", namespace: "shop" } };
    const [answered] = await provider.run(other, [check("ok")]);
    assert.deepEqual(answered, { kind: "value", value: 200 });
  });

  test("no answer is an error outcome, which the judge calls a failed call", async () => {
    const closed: AnalysisCheck = { ...check("ok"), query: "http://127.0.0.1:1/gate" };
    const outcomes = await webhookAnalysis({ destinations: destinations(() => true) }).run(app, [closed]);
    assert.equal(outcomes[0]?.kind, "error");
    assert.match(scoreAnalysis([closed], outcomes)[0]?.message ?? "", /^call failed: /);
  });
});

test("webhookRefusal names the webhooks outside the policy", () => {
  const spec = {
    ...app.spec,
    analysis: {
      webhooks: [
        { name: "in", type: "rollout" as const, url: "http://tester.svc/" },
        { name: "out", type: "pre-rollout" as const, url: "http://metadata.google.internal/" },
      ],
    },
  };
  assert.equal(
    webhookRefusal(
      { ...app, spec },
      destinations(() => true),
    ),
    undefined,
  );
  const refusal = webhookRefusal(
    { ...app, spec },
    destinations((url) => url.includes(".svc")),
  );
  assert.equal(refusal?.reason, "WebhookURLNotAllowed");
  assert.match(refusal?.message ?? "", /^webhook out \(http:\/\/metadata\.google\.internal\) is outside/);
  assert.doesNotMatch(refusal?.message ?? "", /webhook in \(/);
});

test("webhookRefusal judges URLs as they are called: {{variables}} rendered", () => {
  const spec = {
    ...app.spec,
    analysis: { webhooks: [{ name: "t", type: "rollout" as const, url: "http://tester.{{namespace}}.svc/{{name}}" }] },
  };
  const asked: string[] = [];
  const refusal = webhookRefusal(
    { ...app, spec },
    {
      vet: (_app, url) => {
        asked.push(url);
        return undefined;
      },
    },
  );
  assert.equal(refusal, undefined);
  assert.deepEqual(asked, ["http://tester.shop.svc/web"]);
});

test("webhookRefusal refuses a webhook whose body would be over the bound, naming it", () => {
  const metadata = Object.fromEntries(Array.from({ length: 8 }, (_, i) => [`k${i}-${"k".repeat(9000)}`, "v"]));
  const small = { name: "small", type: "rollout" as const, url: "http://a.shop.svc/", metadata: { a: "b" } };
  const big = { name: "big", type: "confirm-rollout" as const, url: "http://a.shop.svc/", metadata };
  const judged = (webhooks: (typeof small | typeof big)[]) =>
    webhookRefusal(
      { ...app, spec: { ...app.spec, analysis: { webhooks } } },
      destinations(() => true),
    );
  assert.equal(judged([small]), undefined);
  const refusal = judged([small, big]);
  assert.equal(refusal?.reason, "WebhookBodyTooLarge");
  assert.match(refusal?.message ?? "", /^webhook big: its request body would be \d+ bytes, over the 65536-byte limit/);
  // A URL refusal is said first: it is the one to fix before the body matters.
  const outside = webhookRefusal(
    { ...app, spec: { ...app.spec, analysis: { webhooks: [big] } } },
    destinations(() => false),
  );
  assert.equal(outside?.reason, "WebhookURLNotAllowed");
});

test("analysisByMode sends each check to its mode's provider and keeps the order", async () => {
  const seen: string[][] = [];
  const fake = (tag: number): AnalysisProvider => ({
    run: (_app, checks) => {
      seen.push(checks.map((c) => c.name));
      return Promise.resolve(checks.map(() => ({ kind: "value" as const, value: tag })));
    },
  });
  const checks: AnalysisCheck[] = [
    { name: "a", mode: "traffic", query: "q" },
    { name: "b", mode: "webhook", query: "http://x.svc/" },
    { name: "c", mode: "threshold", query: "q" },
  ];
  const outcomes = await analysisByMode({ webhook: fake(2) }, fake(1)).run(app, checks);
  assert.deepEqual(outcomes, [
    { kind: "value", value: 1 },
    { kind: "value", value: 2 },
    { kind: "value", value: 1 },
  ]);
  assert.deepEqual(seen.sort(), [["a", "c"], ["b"]]);
});

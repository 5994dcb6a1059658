import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { cloudWatchAnalysis, GET_METRIC_DATA_TARGET } from "./cloudwatch.js";
import { accessOver, app, checkOf, secretFor, startFakeSource, type FakeSource } from "./fake-source.test-helpers.js";

/**
 * GetMetricData's answer in the documented response syntax (JSON), with values filled in:
 * https://docs.aws.amazon.com/AmazonCloudWatch/latest/APIReference/API_GetMetricData.html#API_GetMetricData_ResponseSyntax
 * — `MetricDataResults[]` with `Id`, `Label`, `StatusCode`, `Timestamps` (epoch seconds in JSON) and
 * `Values`, newest first under the default `ScanBy` TimestampDescending.
 */
function metricData(results: { Id: string; Label: string; Values: number[] }[]) {
  return {
    Messages: [],
    MetricDataResults: results.map((r) => ({
      ...r,
      StatusCode: "Complete",
      Timestamps: r.Values.map((_, i) => 1777636740 - 60 * i),
      Messages: [],
    })),
  };
}

/**
 * An error of the AWS JSON 1.0 protocol: HTTP 400 with `__type` and `message`
 * (https://smithy.io/2.0/aws/protocols/aws-json-1_0-protocol.html#operation-error-serialization;
 * InvalidParameterValue is among GetMetricData's documented errors).
 */
const INVALID_PARAMETER = {
  __type: "com.amazonaws.cloudwatch#InvalidParameterValueException",
  message: "The value 5 for parameter MetricDataQueries.member.1.MetricStat.Period is not a multiple of 60.",
};

const LATENCY_QUERY = JSON.stringify([
  {
    Id: "p99",
    MetricStat: {
      Metric: {
        Namespace: "AWS/ApplicationELB",
        MetricName: "TargetResponseTime",
        Dimensions: [{ Name: "TargetGroup", Value: "targetgroup/shop-canary/0123" }],
      },
      Period: 60,
      Stat: "p99",
    },
  },
]);

describe("CloudWatch (GetMetricData, the documented AWS JSON 1.0 API, SigV4 signed)", () => {
  let server: FakeSource;
  let reply: () => { status?: number; body: unknown };
  before(async () => {
    server = await startFakeSource(() => reply());
  });
  after(() => server.close());

  const credentials = {
    accessKeyId: "AKIDEXAMPLE",
    secretAccessKey: "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY",
    sessionToken: "session-token-1",
  };
  const spec = () => ({
    type: "cloudwatch" as const,
    address: server.url,
    region: "eu-west-1",
    secretRef: { name: "aws" },
  });
  const analysis = () => cloudWatchAnalysis(accessOver({ "team-a/aws": secretFor(credentials, server.url) }));

  test("an instant check posts GetMetricData over its window, signed, and answers the newest value", async () => {
    reply = () => ({ body: metricData([{ Id: "p99", Label: "TargetResponseTime", Values: [0.42, 0.4, 0.39] }]) });
    assert.deepEqual(await analysis().run(app, [checkOf(LATENCY_QUERY, spec())]), [{ kind: "value", value: 0.42 }]);
    const sent = server.requests.at(-1);
    assert.ok(sent);
    assert.equal(sent.method, "POST");
    assert.equal(sent.url, "/");
    assert.equal(sent.headers["x-amz-target"], GET_METRIC_DATA_TARGET);
    assert.equal(sent.headers["content-type"], "application/x-amz-json-1.0");
    assert.match(String(sent.headers["x-amz-date"]), /^\d{8}T\d{6}Z$/);
    assert.equal(sent.headers["x-amz-security-token"], credentials.sessionToken);
    assert.match(
      sent.headers.authorization ?? "",
      /^AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE\/\d{8}\/eu-west-1\/monitoring\/aws4_request, SignedHeaders=[a-z0-9;-]*host[a-z0-9;-]*x-amz-target[a-z0-9;-]*, Signature=[0-9a-f]{64}$/,
    );
    assert.ok(!JSON.stringify(sent.headers).includes(credentials.secretAccessKey));
    assert.deepEqual(JSON.parse(sent.body), {
      MetricDataQueries: JSON.parse(LATENCY_QUERY) as unknown,
      StartTime: 1777636500,
      EndTime: 1777636800,
      ScanBy: "TimestampDescending",
    });
  });

  test("a judged check asks its range oldest first with its step as the period, and answers samples", async () => {
    reply = () => ({ body: metricData([{ Id: "p99", Label: "TargetResponseTime", Values: [0.3, 0.31, 0.35] }]) });
    const range = { start: "2026-05-01T11:00:00Z", end: "2026-05-01T11:03:00Z", stepSeconds: 60 };
    const check = checkOf(LATENCY_QUERY.replace('"Period":60', '"Period":300'), spec(), range);
    assert.deepEqual(await analysis().run(app, [check]), [{ kind: "samples", values: [0.3, 0.31, 0.35] }]);
    const body = JSON.parse(server.requests.at(-1)?.body ?? "") as Record<string, unknown>;
    assert.equal(body.ScanBy, "TimestampAscending");
    assert.equal(body.StartTime, 1777633200);
    assert.equal(body.EndTime, 1777633380);
    assert.equal((body.MetricDataQueries as { MetricStat: { Period: number } }[])[0]?.MetricStat.Period, 60);
  });

  test("an AWS error is the outcome's message; a query that is not JSON is not sent", async () => {
    reply = () => ({ status: 400, body: INVALID_PARAMETER });
    const [outcome] = await analysis().run(app, [checkOf(LATENCY_QUERY, spec())]);
    assert.match(
      outcome?.kind === "error" ? outcome.message : "",
      /^CloudWatch http:.*: HTTP 400: The value 5 for parameter/,
    );
    const before = server.requests.length;
    const [bad] = await analysis().run(app, [checkOf("TargetResponseTime p99", spec())]);
    assert.match(bad?.kind === "error" ? bad.message : "", /not a JSON array of MetricDataQueries/);
    assert.equal(server.requests.length, before);
  });

  test("without an address the regional endpoint is the only destination, and the Secret must be bound to it", async () => {
    const [outcome] = await analysis().run(app, [
      checkOf(LATENCY_QUERY, { type: "cloudwatch", region: "eu-west-1", secretRef: { name: "aws" } }),
    ]);
    const message = outcome?.kind === "error" ? outcome.message : "";
    assert.ok(message.includes("https://monitoring.eu-west-1.amazonaws.com"), message);
    assert.ok(!message.includes(credentials.secretAccessKey));
  });
});

/**
 * The audit-log reader on made-up audit events (no cluster needed): writes attributed to their replica and app,
 * windows cut at a lease duration, a handover counted and never a violation, two replicas' writes interleaved
 * within a lease duration counted as one.
 */
import assert from "node:assert/strict";
import { mkdtemp, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, test } from "node:test";
import {
  appOf,
  auditLog,
  auditTime,
  auditWrites,
  replicaOf,
  replicaWrites,
  writeWindows,
  type AuditEvent,
} from "../support/write-audit.js";

const T0 = Date.parse("2026-01-01T00:00:00Z");
const apps = new Set(["shop/web", "shop/web-api", "shop/my.app"]);

/** An audit event as kube-apiserver writes it at level Metadata, `ms` after T0. */
function event(
  ms: number,
  identity: string | undefined,
  resource: string,
  name: string,
  verb = "patch",
  subresource?: string,
): AuditEvent {
  return {
    stage: "ResponseComplete",
    verb,
    userAgent: identity === undefined ? "kubectl/v1.34.4 (linux/amd64)" : `canaryapp/0.1.0 (${identity})`,
    objectRef: {
      resource,
      namespace: "shop",
      name,
      ...(subresource !== undefined && { subresource }),
    },
    responseStatus: { code: 200 },
    requestReceivedTimestamp: new Date(T0 + ms).toISOString().replace("Z", "123Z"),
  };
}

describe("reading the audit log", () => {
  test("a replica's User-Agent names it; any other client is no replica", () => {
    assert.equal(replicaOf("canaryapp/0.1.0 (canaryapp-7d9f-x2k)"), "canaryapp-7d9f-x2k");
    assert.equal(replicaOf("canaryapp/unknown (a b)"), "a b");
    assert.equal(replicaOf("kube-controller-manager/v1.34.4 (linux/amd64) kubernetes/abc"), undefined);
    assert.equal(replicaOf(undefined), undefined);
  });

  test("times keep the server's microseconds", () => {
    assert.equal(auditTime("2026-01-01T00:00:00.123456Z"), T0 + 123.456);
    assert.equal(auditTime("2026-01-01T00:00:01Z"), T0 + 1000);
    assert.ok(Number.isNaN(auditTime("yesterday")));
  });

  test("each object written names its app: the CanaryApp, a child, a pod of a child, an Event", () => {
    const ref = (resource: string, name: string) => ({ resource, namespace: "shop", name });
    assert.equal(appOf(ref("canaryapps", "web"), apps), "shop/web");
    assert.equal(appOf(ref("deployments", "web-primary"), apps), "shop/web");
    assert.equal(appOf(ref("services", "web-secondary"), apps), "shop/web");
    assert.equal(appOf(ref("virtualservices", "web"), apps), "shop/web");
    // The app web-api's own children, not web's.
    assert.equal(appOf(ref("deployments", "web-api-primary"), apps), "shop/web-api");
    assert.equal(appOf(ref("destinationrules", "web-api"), apps), "shop/web-api");
    assert.equal(appOf(ref("pods", "web-primary-2"), apps), "shop/web");
    assert.equal(appOf(ref("statefulsets", "web"), apps), "shop/web");
    assert.equal(appOf(ref("events", "web.18a2b3c4d5e6f708"), apps), "shop/web");
    assert.equal(appOf(ref("events", "my.app.18a2b3c4d5e6f708"), apps), "shop/my.app");
    assert.equal(appOf(ref("deployments", "other-primary"), apps), undefined);
    assert.equal(appOf(ref("events", "other.1"), apps), undefined);
  });

  test("only replicas' completed writes count; a CanaryApp anyone wrote names an app", () => {
    const { writes, unattributed } = replicaWrites([
      event(0, undefined, "canaryapps", "cart", "create"),
      event(10, "r1", "deployments", "cart-primary", "create"),
      event(20, "r1", "canaryapps", "cart", "update", "status"),
      { ...event(30, "r1", "deployments", "cart-primary"), verb: "get" },
      { ...event(40, "r1", "deployments", "cart-primary"), stage: "ResponseStarted" },
      event(50, "r1", "deployments", "lost-primary"),
      event(60, undefined, "deployments", "cart-primary", "update", "status"),
    ]);
    assert.deepEqual(
      writes.map((w) => [w.replica, w.app, w.what]),
      [
        ["r1", "shop/cart", "create deployments shop/cart-primary"],
        ["r1", "shop/cart", "update canaryapps/status shop/cart"],
      ],
    );
    assert.deepEqual(unattributed, ["r1: patch deployments shop/lost-primary"]);
  });

  test("auditLog reads a file, one JSON event a line, only the namespace's", async () => {
    const dir = await mkdtemp(join(tmpdir(), "canaryapp-audit-"));
    const path = join(dir, "audit.log");
    const elsewhere = { ...event(5, "r9", "deployments", "web-primary"), objectRef: { namespace: "x", name: "web" } };
    const lines = [event(0, "r1", "deployments", "web-primary"), elsewhere, event(10, "r2", "deployments", "web")];
    await writeFile(path, `${lines.map((l) => JSON.stringify(l)).join("\n")}\n{"cut short`);
    const audit = await auditLog(path, "shop", { apps: ["shop/web"] });
    assert.equal(audit.writes, 2);
    assert.deepEqual(audit.replicas, ["r1", "r2"]);
    assert.equal(audit.handovers, 1);
  });
});

describe("windows and violations", () => {
  const write = (ms: number, replica: string, app = "shop/web") => ({
    at: T0 + ms,
    replica,
    app,
    what: "patch",
    code: 200,
  });

  test("a window is a run of one replica's writes less than a lease duration apart", () => {
    const windows = writeWindows([write(0, "a"), write(14_000, "a"), write(40_000, "a"), write(41_000, "a")], 15_000);
    assert.deepEqual(
      windows.map((w) => [w.from - T0, w.to - T0, w.writes]),
      [
        [0, 14_000, 2],
        [40_000, 41_000, 2],
      ],
    );
  });

  test("a handover, however quick, is no violation", () => {
    const audit = auditWrites([write(0, "a"), write(1_000, "a"), write(1_001, "b"), write(3_000, "b")]);
    assert.deepEqual(audit.overlaps, []);
    assert.equal(audit.tenures, 2);
    assert.equal(audit.handovers, 1);
    assert.equal(audit.longestHandoverMs, 1);
  });

  test("another replica writing between two writes less than a lease duration apart is one violation", () => {
    const audit = auditWrites([write(0, "a"), write(1_000, "b"), write(2_000, "a"), write(2_500, "b")], {
      origin: T0,
    });
    assert.equal(audit.overlaps.length, 1);
    assert.match(
      audit.overlaps[0] ?? "",
      /^shop\/web: a \(2 writes 0–2000 ms\) and b \(2 writes 1000–2500 ms\) overlap 1000 ms$/,
    );
    assert.equal(audit.handovers, 3);
  });

  test("a replica back after more than a lease duration, and other apps' writes, are no violation", () => {
    const audit = auditWrites([
      write(0, "a"),
      write(5_000, "b"),
      write(20_000, "a"),
      write(1_000, "b", "shop/cart"),
      write(1_500, "a", "shop/web-api"),
    ]);
    assert.deepEqual(audit.overlaps, []);
    assert.equal(audit.apps, 3);
  });

  test("two replicas' writes at the same microsecond overlap", () => {
    assert.equal(auditWrites([write(0, "a"), write(0, "b")]).overlaps.length, 1);
  });
});

import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { pino } from "pino";
import type { CanaryApp } from "../api/types.js";
import { FakeClock, flush } from "../controller/fake-clock.test-helpers.js";
import type { AnalysisProvider } from "../analysis/providers/analysis-provider.js";
import type { AnalysisCheck } from "../analysis/checks.js";
import type { QueryOutcome } from "../analysis/outcome.js";
import { AnalysisRuns, type AnalysisState } from "./analysis-runs.js";

const CHECKS: AnalysisCheck[] = [{ name: "errors", mode: "threshold", query: "errors", max: 0 }];

function app(name: string, url: string): CanaryApp {
  return {
    apiVersion: "canary.example.com/v1",
    kind: "CanaryApp",
    metadata: { namespace: "ns", name },
    spec: { image: "a:1", imageListenPort: 8080, prometheusURL: url },
  };
}

/** A provider whose runs the test answers by hand. */
class ManualProvider implements AnalysisProvider {
  readonly pending: { app: string; resolve(outcomes: QueryOutcome[]): void; reject(error: Error): void }[] = [];
  run(subject: CanaryApp): Promise<QueryOutcome[]> {
    return new Promise((resolve, reject) => this.pending.push({ app: subject.metadata.name ?? "", resolve, reject }));
  }
  answer(app: string, outcomes: QueryOutcome[]): void {
    const i = this.pending.findIndex((p) => p.app === app);
    assert.ok(i >= 0, `a run of ${app} is pending`);
    this.pending.splice(i, 1)[0]?.resolve(outcomes);
  }
}

function setup(perHost = 4) {
  const clock = new FakeClock();
  const provider = new ManualProvider();
  const requeued: string[] = [];
  const runs = new AnalysisRuns({
    provider,
    requeue: (key) => requeued.push(key),
    hostOf: (a) => new URL(a.spec.prometheusURL ?? "").host,
    deadlineMs: () => 5000,
    perHost,
    clock,
    log: pino({ level: "silent" }),
  });
  return { clock, provider, requeued, runs };
}

const passed = (state: AnalysisState): boolean | undefined =>
  state.kind === "done" ? state.results.every((m) => m.passed) : undefined;

describe("AnalysisRuns", () => {
  test("the first ask starts the run; its end requeues the key; the next ask of that step gets the result", async () => {
    const { provider, requeued, runs } = setup();
    const shop = app("shop", "http://prom:9090");
    assert.deepEqual(runs.state("ns/shop", "step-1", shop, CHECKS), { kind: "running" });
    assert.deepEqual(runs.state("ns/shop", "step-1", shop, CHECKS), { kind: "running" }, "asked again: not restarted");
    await flush();
    assert.equal(provider.pending.length, 1);
    provider.answer("shop", [{ kind: "value", value: 0 }]);
    await flush();
    assert.deepEqual(requeued, ["ns/shop"]);
    assert.equal(passed(runs.state("ns/shop", "step-1", shop, CHECKS)), true);
  });

  test("a result is never handed to another step: asking for a later step starts a new run", async () => {
    const { provider, requeued, runs } = setup();
    const shop = app("shop", "http://prom:9090");
    runs.state("ns/shop", "step-1", shop, CHECKS);
    await flush();
    provider.answer("shop", [{ kind: "value", value: 0 }]);
    await flush();
    assert.deepEqual(runs.state("ns/shop", "step-2", shop, CHECKS), { kind: "running" });
    await flush();
    assert.equal(provider.pending.length, 1, "a new run for step-2");
    // A run superseded while in flight ends unheard.
    runs.state("ns/shop", "step-3", shop, CHECKS);
    await flush();
    provider.answer("shop", [{ kind: "value", value: 1 }]);
    await flush();
    assert.deepEqual(requeued, ["ns/shop"], "the superseded run did not requeue");
    assert.deepEqual(runs.state("ns/shop", "step-3", shop, CHECKS), { kind: "running" });
  });

  test("past the deadline every check is answered with an error, and the key is requeued", async () => {
    const { clock, requeued, runs } = setup();
    const shop = app("shop", "http://hangs:9090");
    runs.state("ns/shop", "s", shop, CHECKS);
    await clock.advance(4999);
    assert.deepEqual(requeued, []);
    await clock.advance(1);
    assert.deepEqual(requeued, ["ns/shop"]);
    const state = runs.state("ns/shop", "s", shop, CHECKS);
    assert.equal(state.kind, "done");
    assert.equal(passed(state), false);
    assert.match(state.kind === "done" ? (state.results[0]?.message ?? "") : "", /did not finish within 5s/);
  });

  test("runs to one host are bounded; another host's apps never wait for them", async () => {
    const { provider, runs } = setup(2);
    for (const name of ["a", "b", "c"]) runs.state(`ns/${name}`, "s", app(name, "http://hangs:9090"), CHECKS);
    runs.state("ns/calm", "s", app("calm", "http://prom:9090"), CHECKS);
    await flush();
    assert.deepEqual(provider.pending.map((p) => p.app).sort(), ["a", "b", "calm"], "c waits for a slot of hangs:9090");
    provider.answer("a", [{ kind: "value", value: 0 }]);
    await flush();
    await flush();
    assert.deepEqual(provider.pending.map((p) => p.app).sort(), ["b", "c", "calm"]);
  });

  test("a provider's rejection is handed out once, and the next ask starts again", async () => {
    const { provider, runs } = setup();
    const shop = app("shop", "http://prom:9090");
    runs.state("ns/shop", "s", shop, CHECKS);
    await flush();
    provider.pending.pop()?.reject(new Error("reading Secret failed"));
    await flush();
    const state = runs.state("ns/shop", "s", shop, CHECKS);
    assert.equal(state.kind, "failed");
    assert.deepEqual(runs.state("ns/shop", "s", shop, CHECKS), { kind: "running" });
  });
});

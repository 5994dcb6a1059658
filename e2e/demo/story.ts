/**
 * The story of the original CanaryApp operator's README, played with kubectl against a running controller:
 * v1 goes live; v2 is tested on the secondary while its weight climbs step by step, and is promoted; v3
 * answers errors, the analysis catches it, traffic returns to the primary and v3 is recorded as failed.
 * The demo (main.ts) tells it on a terminal and the end-to-end tests (e2e/story.test.ts) assert it: both
 * run this one implementation.
 */
import { readFile } from "node:fs/promises";
import { join } from "node:path";
import { dumpYaml, loadYaml } from "@kubernetes/client-node";
import { DEFAULTS, parseDurationSeconds, weightSequence } from "../../src/api/defaults.js";
import { ANNOTATIONS, type CanaryApp, type FailedImage } from "../../src/api/types.js";
import { SEED_CHECK_NAME } from "../../src/analysis/checks.js";
import { pinImage } from "../../src/identity/image-ref.js";
import { findRepoRoot } from "../cluster/toolchain.js";
import type { Kubectl } from "./kubectl.js";
import type { StoryRecorder } from "./recorder.js";
import { totalBad, type SimulatorState } from "../sim/ledger.js";

/** The seed's sample, as `config/samples` ships it. */
export const SAMPLE_FILE = join("config", "samples", "canaryapp_v1alpha1_canaryapp.yaml");

/** Reads the sample CanaryApp from the repository. */
export async function readSample(repoRoot: string = findRepoRoot()): Promise<CanaryApp> {
  return loadYaml<CanaryApp>(await readFile(join(repoRoot, SAMPLE_FILE), "utf8"));
}

/** The same repository and name with another tag: `team/app:v1` → `team/app:v2`. */
export function withTag(image: string, tag: string): string {
  const slash = image.lastIndexOf("/");
  const colon = image.lastIndexOf(":");
  const repository = colon > slash ? image.slice(0, colon) : image;
  return `${repository}:${tag}`;
}

export interface DemoSettings {
  /** The Prometheus the controller queries for this app. */
  prometheusURL: string;
  /** analysis.interval: time between two steps. */
  interval: string;
  /** spec.mesh and spec.service's hosts and gateways, when the story routes otherwise than the sample. */
  route?: StoryOptions["route"];
}

/** What the demo copy of the sample changes, for people: field, from, to, why. */
export interface Override {
  field: string;
  from: string;
  to: string;
  why: string;
}

/**
 * The sample as the demo applies it: the seed's fields, with the local Prometheus and a short analysis
 * interval. The sample's `prometheusQuery` is kept as it is: it counts the secondary's 5xx answers since the
 * step began, so v3's errors at the first step's weight pass its `> 2` within one interval (see `detection`).
 */
export function demoSample(seed: CanaryApp, settings: DemoSettings): { app: CanaryApp; overrides: Override[] } {
  const app = structuredClone(seed);
  const overrides: Override[] = [];
  overrides.push({
    field: "spec.prometheusURL",
    from: seed.spec.prometheusURL ?? "(unset)",
    to: settings.prometheusURL,
    why: "the local Prometheus",
  });
  app.spec.prometheusURL = settings.prometheusURL;
  const interval = seed.spec.analysis?.interval;
  if (interval !== settings.interval) {
    overrides.push({
      field: "spec.analysis.interval",
      from: interval ?? "30s (default)",
      to: settings.interval,
      why: "a short demo",
    });
    app.spec.analysis = { ...app.spec.analysis, interval: settings.interval };
  }
  const route = settings.route;
  if (route !== undefined && route.mesh !== (seed.spec.mesh ?? "istio")) {
    overrides.push({
      field: "spec.mesh",
      from: seed.spec.mesh ?? "istio (default)",
      to: route.mesh,
      why: "the router under test",
    });
    app.spec.mesh = route.mesh;
  }
  if (route?.gateways !== undefined || route?.hosts !== undefined) {
    const service = { ...app.spec.service };
    if (route.hosts !== undefined) service.hosts = route.hosts;
    if (route.gateways !== undefined) service.gateways = route.gateways;
    overrides.push({
      field: "spec.service",
      from: JSON.stringify(seed.spec.service ?? {}),
      to: JSON.stringify(service),
      why: "traffic enters through a gateway",
    });
    app.spec.service = service;
  }
  return { app, overrides };
}

/**
 * The window and threshold of a seed-style query at its first analysis, one interval into the step:
 * `increase(...[20s]) > 2` → { windowSeconds: 20, above: 2 }; `[{{stepWindow}}]` is the interval.
 */
export function seedQueryShape(
  query: string,
  intervalSeconds: number,
): { windowSeconds: number; above: number; window: string } | undefined {
  const fixed = /\[(\d+)s\]/.exec(query);
  const step = /\[\{\{\s*stepWindow\s*\}\}\]/.test(query);
  const above = />\s*(\d+(?:\.\d+)?)\s*$/.exec(query);
  if ((!fixed?.[1] && !step) || !above?.[1]) return undefined;
  if (step) return { windowSeconds: intervalSeconds, above: Number(above[1]), window: "{{stepWindow}}" };
  return { windowSeconds: Number(fixed?.[1]), above: Number(above[1]), window: `${fixed?.[1]}s` };
}

/**
 * Whether a failing image is caught at the first step with this query, interval and traffic: the errors it
 * answers within one interval (less a second or two before Prometheus has scraped them) at the first step's
 * weight, seen through the query's window, must exceed the query's threshold. A sentence says why.
 */
export function detection(
  query: string,
  intervalSeconds: number,
  rps: number,
  firstWeight: number,
): { ok: boolean; expected: number; text: string } {
  const shape = seedQueryShape(query, intervalSeconds);
  if (shape === undefined)
    return { ok: true, expected: NaN, text: "the query is not of the form increase(...[Ns]) > N" };
  const scrapeLagSeconds = 2;
  const seconds = Math.max(0, Math.min(shape.windowSeconds, intervalSeconds) - scrapeLagSeconds);
  const expected = (rps * firstWeight * seconds) / 100;
  const ok = expected > shape.above;
  const text =
    `v3 answers every request with 500: at ${firstWeight}% of ${rps} requests/s, about ${Math.round(expected)} errors ` +
    `reach the [${shape.window}] window (${shape.windowSeconds}s) before the first analysis, ${ok ? "more" : "not more"} than its > ${shape.above}`;
  return { ok, expected, text };
}

export interface StoryHooks {
  /** A new part of the story begins. */
  chapter?(index: number, title: string): void;
  /** A command the story runs, as a person would type it. */
  command?(display: string, input?: string): void;
  /** A remark: what was changed and why, what to look for. */
  note?(text: string): void;
  /** Output of a command worth showing. */
  output?(text: string): void;
}

export interface StoryContext {
  kubectl: Kubectl;
  recorder: StoryRecorder;
  namespace: string;
  prometheusURL: string;
  /** Requests per second the simulator sends the app (for the detection note). */
  rps: number;
  /** Stops the story's waits (Ctrl-C). */
  signal?: AbortSignal;
}

export interface StoryOptions {
  /** analysis.interval of the demo copy (default 5s). */
  interval?: string;
  /**
   * The route the app's copy asks for (`spec.mesh`: the sample's VirtualService when absent, an HTTPRoute with
   * `gateway-api`), and its `spec.service` hosts and gateways (a Gateway parent).
   */
  route?: { mesh: "istio" | "gateway-api"; hosts?: string[]; gateways?: string[] };
}

export interface Chapter {
  title: string;
  startedAt: number;
  endedAt: number;
}

export interface Check {
  name: string;
  ok: boolean;
  detail: string;
}

export interface StoryResult {
  images: { v1: string; v2: string; v3: string };
  /** The weight steps the spec asks for. */
  steps: number[];
  chapters: Chapter[];
  /** The secondary's routed weights during each test, consecutive repeats folded, leading zeros dropped. */
  weights: { v2: number[]; v3: number[] };
  /** The CanaryApp at the end. */
  app: CanaryApp;
  /** v3's entry in status.failedImages. */
  failure: FailedImage | undefined;
  /** What the story promises, each checked. */
  checks: Check[];
  /** True when every check passed. */
  ok: boolean;
}

/** Plays the whole story; resolves with what happened, or rejects when a step does not come about in time. */
export async function runStory(
  ctx: StoryContext,
  hooks: StoryHooks = {},
  opts: StoryOptions = {},
): Promise<StoryResult> {
  const { kubectl, recorder, namespace } = ctx;
  const seed = await readSample();
  const name = seed.metadata.name ?? "canaryapp-sample";
  if (name !== recorder.name) throw new Error(`the recorder follows ${recorder.name}, the sample is ${name}`);
  const interval = opts.interval ?? "5s";
  const { app, overrides } = demoSample(seed, {
    prometheusURL: ctx.prometheusURL,
    interval,
    ...(opts.route !== undefined ? { route: opts.route } : {}),
  });
  const steps = weightSequence(app.spec.analysis);
  const intervalSeconds = parseDurationSeconds(interval);
  const images = { v1: seed.spec.image, v2: withTag(seed.spec.image, "v2"), v3: withTag(seed.spec.image, "v3") };
  // A test takes one interval per step, then the rollout of the primary: leave room for a slow machine.
  const testTimeoutMs = ((steps.length + 2) * intervalSeconds + 120) * 1000;
  const wait = <T>(what: string, check: (r: StoryRecorder) => T | undefined, timeoutMs: number) =>
    recorder.until(what, check, { timeoutMs, ...(ctx.signal ? { signal: ctx.signal } : {}) });
  const chapters: Chapter[] = [];
  const chapter = (title: string) => {
    hooks.chapter?.(chapters.length + 1, title);
    const c: Chapter = { title, startedAt: Date.now(), endedAt: 0 };
    chapters.push(c);
    return c;
  };
  const kubectlRun = async (args: string[], input?: string) => {
    hooks.command?.(kubectl.display(args), input);
    return kubectl.run(args, input);
  };
  const patchImage = (image: string) =>
    kubectlRun([
      "-n",
      namespace,
      "patch",
      "canaryapp",
      name,
      "--type=merge",
      "-p",
      JSON.stringify({ spec: { image } }),
    ]);

  // 1. v1 goes live.
  const one = chapter(`${tagOf(images.v1)} goes live`);
  hooks.note?.(`${SAMPLE_FILE}, with ${overrides.map((o) => `${o.field} → ${o.to} (${o.why})`).join(", ")}`);
  const query = app.spec.prometheusQuery ?? "";
  const caught = detection(query, intervalSeconds, ctx.rps, steps[0] ?? 10);
  hooks.note?.(`prometheusQuery unchanged from the sample: ${caught.text}`);
  hooks.note?.(
    `no step passes without evidence: the secondary must serve ${app.spec.analysis?.minRequests ?? DEFAULTS.minRequests} requests in it (analysis.minRequests)`,
  );
  // lineWidth -1: the query stays on one line, as in the sample.
  await kubectlRun(["-n", namespace, "apply", "-f", "-"], dumpYaml(app, { lineWidth: -1 }));
  await wait(
    `${name}: Healthy with ${images.v1} on an Available primary`,
    (r) => {
      const a = r.app();
      if (a?.status?.phase === "Invalid") throw new Error(`${name} is Invalid: ${a.status.message}`);
      const primary = r.workload("primary");
      return a?.status?.phase === "Healthy" &&
        a.status.primaryImage === images.v1 &&
        primary?.image === images.v1 &&
        primary.available >= primary.replicas
        ? true
        : undefined;
    },
    120_000,
  );
  one.endedAt = Date.now();

  // 2. v2 is tested step by step and promoted.
  const two = chapter(`${tagOf(images.v2)} is tested step by step, then promoted`);
  await patchImage(images.v2);
  await wait(
    `${name}: ${images.v2} promoted and the secondary removed`,
    (r) => {
      const a = r.app();
      const failed = a?.status?.failedImages?.find((f) => f.image === images.v2);
      if (failed) throw new Error(`${images.v2} failed its test: ${failed.reason}: ${failed.message}`);
      // The primary is pinned to the digest v2's pods ran, when they reported one (ADR 0011).
      const digest = a?.status?.primary?.digest;
      const deployed = digest !== undefined ? pinImage(images.v2, digest) : images.v2;
      return a?.status?.phase === "Healthy" &&
        a.status.primaryImage === images.v2 &&
        r.workload("primary")?.image === deployed &&
        r.workload("secondary") === null &&
        r.weights()?.secondary === 0
        ? true
        : undefined;
    },
    testTimeoutMs,
  );
  two.endedAt = Date.now();

  // 3. v3 answers errors; the analysis catches it and traffic returns to v2.
  const three = chapter(`${tagOf(images.v3)} answers errors: caught and rolled back`);
  await patchImage(images.v3);
  await wait(
    `${name}: ${images.v3} rolled back and recorded as failed`,
    (r) => {
      const a = r.app();
      if (a?.status?.primaryImage === images.v3) throw new Error(`${images.v3} was promoted`);
      return a?.status?.phase === "Failed" &&
        a.status.failedImages?.some((f) => f.image === images.v3) &&
        r.workload("secondary") === null &&
        r.weights()?.secondary === 0
        ? true
        : undefined;
    },
    testTimeoutMs,
  );
  three.endedAt = Date.now();

  const final = await kubectl.run(["-n", namespace, "get", "canaryapp", name, "-o", "json"]);
  const finalApp = JSON.parse(final) as CanaryApp;
  const failure = finalApp.status?.failedImages?.find((f) => f.image === images.v3);
  const weights = {
    v2: secondarySteps(recorder, two),
    v3: secondarySteps(recorder, three),
  };
  const checks = storyChecks({
    images,
    steps,
    weights,
    app: finalApp,
    failure,
    threshold: seedQueryShape(query, intervalSeconds),
  });
  return { images, steps, chapters, weights, app: finalApp, failure, checks, ok: checks.every((c) => c.ok) };
}

/** The secondary's weights while a chapter ran: consecutive repeats folded, the zeros before the test dropped. */
export function secondarySteps(recorder: StoryRecorder, chapter: Chapter): number[] {
  const seen = recorder
    .weightTimeline()
    .filter((w) => w.at >= chapter.startedAt && w.at <= chapter.endedAt)
    .map((w) => w.value?.secondary ?? 0);
  return foldWeights(seen);
}

/** Folds consecutive repeats and drops leading zeros: [0, 10, 10, 20, 0] → [10, 20, 0]. */
export function foldWeights(weights: readonly number[]): number[] {
  const folded: number[] = [];
  for (const w of weights) {
    if (folded.length === 0 && w === 0) continue;
    if (folded.at(-1) !== w) folded.push(w);
  }
  return folded;
}

/** What the story promises, checked against what happened (pure, for the demo's verdict and the tests). */
export function storyChecks(seen: {
  images: StoryResult["images"];
  steps: readonly number[];
  weights: StoryResult["weights"];
  app: CanaryApp;
  failure: FailedImage | undefined;
  threshold: { above: number } | undefined;
}): Check[] {
  const { images, steps, weights, app, failure } = seen;
  const arrow = (ws: readonly number[]) => ws.join(" → ") || "(none)";
  const expectedV2 = [...steps, 0];
  const last = steps.at(-1) ?? 0;
  const v3Ok =
    weights.v3.length >= 2 &&
    weights.v3.at(-1) === 0 &&
    weights.v3.slice(0, -1).every((w, i) => w === steps[i] && w < last);
  const status = app.status;
  const above = seen.threshold?.above;
  return [
    {
      name: `${tagOf(images.v2)}'s weight climbed step by step, then returned to the primary`,
      ok: arrow(weights.v2) === arrow(expectedV2),
      detail: `secondary ${arrow(weights.v2)} (expected ${arrow(expectedV2)})`,
    },
    {
      name: `${tagOf(images.v2)} was promoted`,
      ok: status?.primaryImage === images.v2 && status.lastPromotion?.image === images.v2,
      detail: `status.primaryImage ${status?.primaryImage ?? "(none)"}`,
    },
    {
      name: `${tagOf(images.v3)} was caught before its last step and rolled back`,
      ok: v3Ok,
      detail: `secondary ${arrow(weights.v3)}`,
    },
    {
      name: `${tagOf(images.v3)} is recorded in status.failedImages`,
      ok:
        failure !== undefined &&
        failure.reason === "AnalysisFailed" &&
        failure.metric === SEED_CHECK_NAME &&
        failure.value !== undefined &&
        (above === undefined || failure.value > above),
      detail: failure
        ? `reason ${failure.reason}, ${failure.metric ?? "?"} = ${failure.value ?? "?"}: ${failure.message}`
        : "no entry",
    },
    {
      name: `the app ends Failed on ${tagOf(images.v3)}, ${tagOf(images.v2)} keeps serving, no secondary`,
      ok:
        status?.phase === "Failed" &&
        app.spec.image === images.v3 &&
        status.primaryImage === images.v2 &&
        status.canary === undefined &&
        status.weights?.secondary === 0,
      detail: `phase ${status?.phase ?? "?"}, primary ${status?.primaryImage ?? "?"}, weights ${status?.weights?.primary ?? "?"}/${status?.weights?.secondary ?? "?"}`,
    },
  ];
}

/**
 * What the story promises of the traffic, from the simulator's ledger (pure): no request reached a track
 * without a Ready pod or was reset by a deleted pod, and no caller outside the mesh reached the secondary.
 */
export function trafficChecks(state: SimulatorState, app: { namespace: string; name: string }): Check[] {
  const bad = totalBad(state);
  const seen = state.apps.find((a) => a.namespace === app.namespace && a.name === app.name);
  const sent = seen ? seen.sent.primary.total + seen.sent.secondary.total : 0;
  const outside = seen?.outsideMesh;
  return [
    {
      name: "no request reached a track without a Ready pod or was reset by a removed secondary",
      ok: bad.total === 0 && sent > 0,
      detail: `${bad.total} bad of ${sent} mesh requests (no Ready pod ${bad.noReadyPods}, reset ${bad.reset}; primary pods replaced by its rolling update: ${bad.replaced})${
        bad.total > 0 ? `; latest: ${seen?.recentBad.join(", ") ?? ""}` : ""
      }`,
    },
    {
      name: "callers outside the mesh never reached the secondary",
      ok: outside !== undefined && outside.primary.total > 0 && outside.secondary.total === 0,
      detail: `outside the mesh: primary ${outside?.primary.total ?? 0}, secondary ${outside?.secondary.total ?? 0}`,
    },
  ];
}

/** `team/app:v2` → `v2`; a reference pinned to a digest keeps 12 of its hex digits: `v2@b2b8afa95a0c`. */
export function tagOf(image: string): string {
  const at = image.indexOf("@");
  if (at >= 0) {
    const name = image.slice(0, at);
    const digest = image
      .slice(at + 1)
      .replace(/^sha256:/, "")
      .slice(0, 12);
    const tag = tagOf(name);
    return `${tag === name ? "" : tag}@${digest}`;
  }
  const slash = image.lastIndexOf("/");
  const colon = image.lastIndexOf(":");
  return colon > slash ? image.slice(colon + 1) : image;
}

/** What a retry of the failed image did: a new test of it, rolled back again (v3 still answers errors). */
export interface Retried {
  /** When the retry annotation was written (Date.now()). */
  at: number;
  /** The new test's start (status.canary.startedAt). */
  startedAt: string;
  /** The image's failure record after the new test. */
  failure: FailedImage;
}

/**
 * After the story: `kubectl annotate canaryapp NAME canaryapp.io/retry=IMAGE` asks for the failed image to be
 * tested again; resolves once a new test of it has started and ended rolled back (the image still fails).
 */
export async function retryFailed(
  ctx: StoryContext,
  name: string,
  image: string,
  timeoutMs = 120_000,
): Promise<Retried> {
  const { kubectl, recorder, namespace } = ctx;
  const at = Date.now();
  await kubectl.run(["-n", namespace, "annotate", "canaryapp", name, `${ANNOTATIONS.retry}=${image}`, "--overwrite"]);
  const wait = <T>(what: string, check: (r: StoryRecorder) => T | undefined) =>
    recorder.until(what, check, { timeoutMs, ...(ctx.signal ? { signal: ctx.signal } : {}) });
  const startedAt = await wait(`${name}: ${image} tested again`, (r) => {
    const canary = r.app()?.status?.canary;
    return canary?.image === image && Date.parse(canary.startedAt) >= at - 1000 ? canary.startedAt : undefined;
  });
  const failure = await wait(`${name}: ${image} rolled back again`, (r) => {
    const status = r.app()?.status;
    const record = status?.failedImages?.find((f) => f.image === image);
    return status?.phase === "Failed" &&
      status.canary === undefined &&
      record !== undefined &&
      Date.parse(record.failedAt) >= Date.parse(startedAt)
      ? record
      : undefined;
  });
  return { at, startedAt, failure };
}

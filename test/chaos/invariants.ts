import type { AppPoint, Change, DeploymentPoint, EventPoint, RoutePoint } from "./world.js";

/** What one app was asked to do: its first image, then one image per wave, each passing its checks or not. */
export interface AppScript {
  name: string;
  initialImage: string;
  waves: { image: string; passes: boolean }[];
}

/** Whether `text` names `image` (and not merely an image whose name starts like it: v1 in v10). */
export function mentions(text: string, image: string): boolean {
  for (let at = text.indexOf(image); at >= 0; at = text.indexOf(image, at + 1)) {
    const next = text[at + image.length];
    if (next === undefined || !/[\w.-]/.test(next)) return true;
  }
  return false;
}

/** `got` is `want` with some steps left out, but not the last one. */
export function isSkipOf(got: readonly number[], want: readonly number[]): boolean {
  if (got.length === 0 || got.length >= want.length || got.at(-1) !== want.at(-1)) return false;
  let i = 0;
  for (const w of want) if (got[i] === w) i++;
  return i === got.length;
}

/** The planned route: the secondary's weight at each step (10, 20, … up to maxWeight). */
export function plannedSteps(stepWeight: number, maxWeight: number): number[] {
  const steps: number[] = [];
  for (let w = stepWeight; w <= maxWeight; w += stepWeight) steps.push(w);
  return steps;
}

/** The image an app ends on: its last passing one, else its first. */
export function lastPassingImage(script: AppScript): string {
  return [...script.waves].reverse().find((w) => w.passes)?.image ?? script.initialImage;
}

/** The weight of `subset` on a VirtualService's first HTTP route; 0 when it has none. */
export function weightOf(route: RoutePoint | undefined, subset: "primary" | "secondary"): number {
  return route?.routes[0]?.find(([s]) => s === subset)?.[1] ?? 0;
}

/**
 * What is wrong with an app at the end (the endState invariant), empty when nothing is: the primary runs the
 * last passing image and status.primaryImage says so, no test runs, the route gives the primary everything,
 * and the secondary is gone.
 */
export function endStateProblems(
  script: AppScript,
  end: {
    app: AppPoint | undefined;
    primaryImage: string | undefined;
    route: RoutePoint | undefined;
    secondaryExists: boolean;
  },
): string[] {
  const lastPassing = lastPassingImage(script);
  const wrong: string[] = [];
  if (end.primaryImage !== lastPassing) wrong.push(`primary runs ${end.primaryImage}`);
  if (end.app?.primaryImage !== lastPassing) wrong.push(`status.primaryImage ${end.app?.primaryImage}`);
  if (end.app?.stage !== undefined) wrong.push(`a test is still ${end.app.stage}`);
  if (weightOf(end.route, "primary") !== 100) wrong.push("the primary does not take all traffic");
  if (end.secondaryExists) wrong.push("the secondary still exists");
  return wrong;
}

/** The invariants, in report order. */
export const INVARIANTS = [
  "weightsSumTo100",
  "noWeightOnUnreadySecondary",
  "noFailingOrSupersededImageOnPrimary",
  "routeSequenceEqualsPlan",
  "failedImageRecordedOnce",
  "endState",
  "impliedEvents",
  "writtenByTwo",
  "watchGaps",
] as const;
export type Invariant = (typeof INVARIANTS)[number];

export interface CheckResult {
  /** Violations per invariant (0 everywhere is a pass). */
  counts: Record<Invariant, number>;
  /** The first violations of each invariant, for the report. */
  examples: Record<Invariant, string[]>;
  /** Per app, the secondary's weights per test as the route carried them (for the report). */
  routes: Record<string, number[][]>;
  /**
   * Of the routeSequenceEqualsPlan violations, those that are only skipped steps: the route carried a part of
   * the planned steps, in order, and the last one (the known fault of a step clock that starts at the decision,
   * not when the route carries the weight).
   */
  skippedStepsOnly: number;
  /** Per app, the durations (ms, by arrival time) of every step on the route but the last of each test. */
  stepDurations: Record<string, number[]>;
}

const MAX_EXAMPLES = 5;

/**
 * Replays the recorded world in etcd order and counts the violations of every invariant:
 * - weightsSumTo100: every HTTP route of a VirtualService, whenever it changes, weighs 100 in all;
 * - noWeightOnUnreadySecondary: whenever the secondary has weight, its Deployment exists and is ready: its status
 *   is of its current generation and counts an available pod, or the generation it has not observed yet left the
 *   pod template as it was in its last ready status. kube-apiserver moves a Deployment's generation when its
 *   annotations change too, not only its spec (the Deployment strategy's PrepareForUpdate: annotations are
 *   copied to the ReplicaSets); the Deployment controller finds the same ReplicaSet by the template's hash, so
 *   its pods stay as they were (a child re-applied with another share label, whose applied-hash annotation
 *   changes, is such a generation);
 * - noFailingOrSupersededImageOnPrimary: the primary Deployment is created with the app's first image (even
 *   when spec.image has changed meanwhile), then only ever changes to the image
 *   being promoted (status: under test, stage Promoting or Finalising), which spec.image names at that moment
 *   and which is not scripted to fail;
 * - routeSequenceEqualsPlan: per test (the image status names as under test when the route changes), the
 *   secondary's distinct non-zero weights in order are exactly the planned steps (a passing image) or exactly
 *   the first step (a failing one, whose first analysis fails); a step withheld while Prometheus is silent and
 *   given again is the same step; weight on the secondary with no test running is a violation too;
 * - failedImageRecordedOnce: an image is in status.failedImages at most once at any moment, a record once
 *   made never changes or disappears, and at the end every failing image is there exactly once;
 * - endState: at the end the primary runs the last passing image and status.primaryImage says so, no test
 *   runs, and the route gives the primary everything;
 * - impliedEvents: each passing image has exactly one Promoted Event, each failing one exactly one RolledBack;
 * - writtenByTwo: an app written by two controller replicas at once, by kube-apiserver's audit log (given by
 *   the caller: the overlapping windows of test/support/write-audit.ts);
 * - watchGaps: watches the server could not resume (given by the recorder).
 */
export function checkWorld(
  history: readonly Change[],
  scripts: readonly AppScript[],
  plan: readonly number[],
  watchGaps = 0,
  /** Times in examples are given in ms since this instant. */
  origin = 0,
  /** The audit's overlapping windows, each one violation of writtenByTwo. */
  writtenByTwo: readonly string[] = [],
): CheckResult {
  const counts = Object.fromEntries(INVARIANTS.map((i) => [i, 0])) as Record<Invariant, number>;
  const examples = Object.fromEntries(INVARIANTS.map((i) => [i, [] as string[]])) as Record<Invariant, string[]>;
  const violate = (invariant: Invariant, text: string) => {
    counts[invariant]++;
    if (examples[invariant].length < MAX_EXAMPLES) examples[invariant].push(text);
  };
  counts.watchGaps = watchGaps;
  if (watchGaps > 0) examples.watchGaps.push(`${watchGaps} watch(es) could not be resumed`);
  for (const overlap of writtenByTwo) violate("writtenByTwo", overlap);

  const apps = new Map<string, AppPoint>();
  const deployments = new Map<string, DeploymentPoint>();
  /** Per Deployment, the pod template of its last ready status. */
  const readyTemplates = new Map<string, string>();
  const serving = (d: DeploymentPoint): boolean =>
    d.ready || (d.available === true && d.template !== undefined && readyTemplates.get(d.name) === d.template);
  const routes = new Map<string, RoutePoint>();
  const events = new Map<string, EventPoint>();
  const byName = new Map(scripts.map((s) => [s.name, s]));
  const failing = new Map(scripts.map((s) => [s.name, new Set(s.waves.filter((w) => !w.passes).map((w) => w.image))]));
  const primaryImage = new Map<string, string | undefined>();
  /** Per app and image under test, the secondary's distinct non-zero weights in order. */
  const tests = new Map<string, Map<string, number[]>>(scripts.map((s) => [s.name, new Map()]));
  const secondaryWeight = new Map<string, number>();
  const stepStarted = new Map<string, number>();
  const stepDurations = new Map<string, number[]>(scripts.map((s) => [s.name, []]));
  const records = new Map<string, Map<string, string>>();
  let skippedStepsOnly = 0;
  /** When each step first reached the route (ms), to place a wrong sequence among the faults. */
  const arrivals = new Map<string, number>();

  const checkSecondary = (app: string, rv: number, at: number) => {
    const weight = weightOf(routes.get(app), "secondary");
    if (weight === 0) return;
    const secondary = deployments.get(`${app}-secondary`);
    if (secondary === undefined || !serving(secondary)) {
      violate(
        "noWeightOnUnreadySecondary",
        `${app} at rv ${rv} (${at - origin} ms): ${weight}% on a secondary that is ${secondary ? "not ready" : "missing"}`,
      );
    }
  };

  for (const change of history) {
    switch (change.kind) {
      case "VirtualService": {
        const app = change.object.name;
        if (change.type === "DELETED") {
          routes.delete(app);
          break;
        }
        routes.set(app, change.object);
        change.object.routes.forEach((route, index) => {
          const sum = route.reduce((n, [, w]) => n + w, 0);
          if (sum !== 100) violate("weightsSumTo100", `${app} route ${index} at rv ${change.rv}: sums to ${sum}`);
        });
        const weight = weightOf(change.object, "secondary");
        const before = secondaryWeight.get(app) ?? 0;
        if (weight !== before && byName.has(app)) {
          const image = apps.get(app)?.canaryImage;
          if (weight > 0 && image === undefined) {
            violate(
              "routeSequenceEqualsPlan",
              `${app} at ${change.at - origin}: ${weight}% on the secondary with no test`,
            );
          } else if (weight > 0 && image !== undefined) {
            const perImage = tests.get(app) ?? new Map<string, number[]>();
            const list = perImage.get(image) ?? [];
            if (list.at(-1) !== weight) {
              list.push(weight);
              arrivals.set(`${app} ${image} ${weight}`, change.at - origin);
            }
            perImage.set(image, list);
            tests.set(app, perImage);
          }
          const started = stepStarted.get(app);
          if (before !== 0 && weight !== 0 && started !== undefined) {
            stepDurations.get(app)?.push(change.at - started);
          }
          stepStarted.set(app, change.at);
        }
        secondaryWeight.set(app, weight);
        checkSecondary(app, change.rv, change.at);
        break;
      }
      case "Deployment": {
        const name = change.object.name;
        if (change.type === "DELETED") {
          deployments.delete(name);
          readyTemplates.delete(name);
        } else {
          deployments.set(name, change.object);
          if (change.object.ready && change.object.template !== undefined) {
            readyTemplates.set(name, change.object.template);
          }
        }
        const app = name.replace(/-(primary|secondary)$/, "");
        if (name.endsWith("-primary") && change.type !== "DELETED") {
          const image = change.object.image;
          if (image !== primaryImage.get(app)) {
            const spec = apps.get(app)?.specImage;
            const previous = primaryImage.get(app);
            const status = apps.get(app);
            const promoting =
              status?.canaryImage === image && (status?.stage === "Promoting" || status?.stage === "Finalising");
            const at = `${app} at ${change.at - origin}`;
            if (previous === undefined) {
              // Created: with the app's first image (a later spec.image is tested first, not deployed).
              const first = byName.get(app)?.initialImage;
              if (image !== first) {
                violate("noFailingOrSupersededImageOnPrimary", `${at}: primary created with ${image}, not ${first}`);
              }
            } else if (!promoting) {
              violate(
                "noFailingOrSupersededImageOnPrimary",
                `${at}: primary changed ${previous} → ${image} with no promotion of it (stage ${status?.stage}, under test ${status?.canaryImage})`,
              );
            } else if (failing.get(app)?.has(image ?? "")) {
              violate("noFailingOrSupersededImageOnPrimary", `${at}: primary got failing ${image}`);
            } else if (spec !== undefined && image !== spec) {
              violate("noFailingOrSupersededImageOnPrimary", `${at}: primary got ${image} while spec.image is ${spec}`);
            }
            primaryImage.set(app, image);
          }
        }
        checkSecondary(app, change.rv, change.at);
        break;
      }
      case "CanaryApp": {
        const app = change.object;
        if (change.type === "DELETED") {
          apps.delete(app.name);
          break;
        }
        apps.set(app.name, app);
        const seen = new Map<string, number>();
        for (const f of app.failedImages) seen.set(f.image, (seen.get(f.image) ?? 0) + 1);
        for (const [image, n] of seen) {
          if (n > 1) violate("failedImageRecordedOnce", `${app.name} at rv ${change.rv}: ${image} recorded ${n} times`);
        }
        const made = records.get(app.name) ?? new Map<string, string>();
        for (const [image, failedAt] of made) {
          const now = app.failedImages.find((f) => f.image === image);
          if (now === undefined || now.failedAt !== failedAt) {
            violate("failedImageRecordedOnce", `${app.name} at rv ${change.rv}: the record of ${image} changed`);
          }
        }
        for (const f of app.failedImages) made.set(f.image, f.failedAt);
        records.set(app.name, made);
        break;
      }
      case "Event": {
        if (change.type === "DELETED") events.delete(change.object.name);
        else events.set(change.object.name, change.object);
        break;
      }
    }
  }

  for (const script of scripts) {
    const name = script.name;
    const observed = tests.get(name) ?? new Map<string, number[]>();
    const scripted = new Set(script.waves.map((w) => w.image));
    for (const image of observed.keys()) {
      if (!scripted.has(image)) violate("routeSequenceEqualsPlan", `${name}: a test of ${image}, which no wave set`);
    }
    for (const wave of script.waves) {
      // A failing image fails its first analysis: it never gets past the first step.
      const want = wave.passes ? plan : plan.slice(0, 1);
      const got = observed.get(wave.image) ?? [];
      if (JSON.stringify(got) !== JSON.stringify(want)) {
        // A failing image judged on a first step the route never carried: that step was skipped too.
        if (isSkipOf(got, want) || (!wave.passes && got.length === 0)) skippedStepsOnly++;
        const when = got.map((w) => `${w}@${arrivals.get(`${name} ${wave.image} ${w}`) ?? "?"}`).join(" ");
        violate("routeSequenceEqualsPlan", `${name} ${wave.image}: route ${when}, plan ${JSON.stringify(want)}`);
      }
    }

    const app = apps.get(name);
    const wrong = endStateProblems(script, {
      app,
      primaryImage: deployments.get(`${name}-primary`)?.image,
      route: routes.get(name),
      secondaryExists: deployments.has(`${name}-secondary`),
    });
    if (wrong.length > 0) violate("endState", `${name} (want ${lastPassingImage(script)}): ${wrong.join("; ")}`);

    for (const wave of script.waves) {
      const n = app?.failedImages.filter((f) => f.image === wave.image).length ?? 0;
      if (n !== (wave.passes ? 0 : 1)) {
        violate(
          wave.passes ? "endState" : "failedImageRecordedOnce",
          `${name}: ${wave.image} in failedImages ${n} times`,
        );
      }
      const reason = wave.passes ? "Promoted" : "RolledBack";
      const told = [...events.values()]
        .filter((e) => e.app === name && e.reason === reason && mentions(e.message, wave.image))
        .reduce((sum, e) => sum + e.count, 0);
      if (told !== 1) violate("impliedEvents", `${name}: ${told} ${reason} Events for ${wave.image}`);
    }
  }

  return {
    counts,
    examples,
    skippedStepsOnly,
    routes: Object.fromEntries([...tests].map(([app, perImage]) => [app, [...perImage.values()]])),
    stepDurations: Object.fromEntries(stepDurations),
  };
}
